#!/bin/bash
# tests/integration/presets.t: the presets of policies/presets/ (issue 18): each
# loads, allows the URLs its clients really fetch (npm install, pip install, cargo,
# go get, mvn, apt-get, git clone, docker pull, huggingface-cli, the model SDKs)
# and refuses what it should not open (a push, a write, another host).  A preset in
# the folder without an allowed URL here fails the test.  Then all of them as the
# bases of one policy (by absolute and by relative name): their rules decide where the
# policy's own do not, its own come first and its deny rule beats a preset's allow.
# No privileges needed.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
B=${AIRLOCK_BUILD:-build}
AL=$B/airlock
if [ ! -x "$AL" ]; then
	echo "1..0 # SKIP $AL not built"
	exit 0
fi
P=policies/presets

# want PRESET allow|deny HOST[:PORT] METHOD PATH [PROTOCOL]: what `policy test` says
want() {
	local f=$P/$1.json exp=$2 dest=$3 m=$4 path=$5 proto=${6:-} out rc
	out=$("$AL" policy test ${proto:+--protocol "$proto"} "$f" "$dest" "$m" "$path" 2>&1)
	rc=$?
	if [ "$exp" = allow ]; then
		is "$rc" 0 "$1: $m $dest$path allowed ($out)"
		tested="$tested $1"
	else
		is "$rc" 1 "$1: $m $dest$path refused ($out)"
	fi
}
tested=""

for f in $P/*.json; do
	"$AL" policy check "$f" >/dev/null 2>&1
	ok $? "$f loads"
done

want npm allow registry.npmjs.org GET /left-pad
want npm allow registry.npmjs.org GET /left-pad/-/left-pad-1.3.0.tgz
want npm allow registry.npmjs.org GET /@types%2fnode
want npm deny registry.npmjs.org PUT /left-pad
want npm deny evil.example.com GET /left-pad
want pypi allow pypi.org GET /simple/requests/
want pypi allow files.pythonhosted.org GET /packages/f9/9b/requests-2.32.3-py3-none-any.whl
want pypi deny pypi.org POST /legacy/
want pypi deny upload.pypi.org POST /legacy/
want crates-io allow index.crates.io GET /se/rd/serde
want crates-io allow static.crates.io GET /crates/serde/serde-1.0.0.crate
want crates-io allow crates.io GET /api/v1/crates/serde/1.0.0/download
want crates-io deny crates.io PUT /api/v1/crates/new
want go-proxy allow proxy.golang.org GET /golang.org/x/text/@v/list
want go-proxy allow sum.golang.org GET /lookup/golang.org/x/text@v0.14.0
want go-proxy deny sum.golang.org POST /lookup/x
want maven-central allow repo.maven.apache.org GET /maven2/junit/junit/4.13.2/junit-4.13.2.pom
want maven-central allow repo1.maven.org GET /maven2/org/slf4j/slf4j-api/maven-metadata.xml
want maven-central deny repo.maven.apache.org PUT /maven2/x
want debian allow deb.debian.org:80 GET /debian/dists/bookworm/InRelease http
want debian allow deb.debian.org GET /debian/pool/main/c/curl/curl_7.88.1-10_amd64.deb
want debian allow security.debian.org:80 GET /debian-security/dists/bookworm-security/InRelease http
want debian deny deb.debian.org:80 GET /debian-archive/ http
want ubuntu allow archive.ubuntu.com:80 GET /ubuntu/dists/noble/InRelease http
want ubuntu allow us.archive.ubuntu.com:80 GET /ubuntu/dists/noble/Release http
want ubuntu allow security.ubuntu.com:80 GET /ubuntu/dists/noble-security/InRelease http
want ubuntu deny archive.ubuntu.com:80 POST /ubuntu/ http
want github-read allow github.com GET /acme/app.git/info/refs
want github-read allow github.com POST /acme/app.git/git-upload-pack
want github-read allow api.github.com GET /repos/acme/app
want github-read allow codeload.github.com GET /acme/app/tar.gz/main
want github-read allow objects.githubusercontent.com GET /github-production-release-asset/1
want github-read deny github.com POST /acme/app.git/git-receive-pack
want github-read deny api.github.com POST /repos/acme/app/issues
want github-read deny api.github.com DELETE /repos/acme/app
want docker-hub allow registry-1.docker.io GET /v2/library/alpine/manifests/latest
want docker-hub allow auth.docker.io GET /token
want docker-hub allow production.cloudflare.docker.com GET /registry-v2/docker/registry/v2/blobs/x
want docker-hub deny registry-1.docker.io PUT /v2/library/alpine/manifests/latest
want hugging-face allow huggingface.co GET /api/models/gpt2
want hugging-face allow huggingface.co GET /gpt2/resolve/main/config.json
want hugging-face allow cdn-lfs.hf.co GET /repos/ab/cd/x
want hugging-face deny huggingface.co POST /api/repos/create
want openai allow api.openai.com POST /v1/chat/completions
want openai allow api.openai.com GET /v1/models
want openai deny api.openai.com GET /dashboard
want anthropic allow api.anthropic.com POST /v1/messages
want anthropic deny api.anthropic.com PUT /v1/messages
want google-ai allow generativelanguage.googleapis.com POST /v1beta/models/gemini-1.5-flash:generateContent
want google-ai deny generativelanguage.googleapis.com DELETE /v1beta/models/x
want google-ai deny storage.googleapis.com GET /x

# --- presets as bases: every preset under one policy of its own ------------------
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
top=$(pwd)
bases=""
for f in $P/*.json; do
	bases="$bases${bases:+, }\"$top/$f\""
done
cat >"$tmp/own.json" <<EOF
{ "policy": "on-presets",
  "base": [$bases],
  "rules": [
    { "id": "openai-key", "host": "api.openai.com",
      "inject": [ { "secret": "openai", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "no-evil-pkg", "action": "deny", "host": "registry.npmjs.org",
      "http": { "paths": ["/evil-pkg", "/evil-pkg/**"] } } ] }
EOF
# relative: a policy in the tree's policies/ naming presets/ beside it
mkdir -p "$tmp/policies/presets"
cp $P/pypi.json "$tmp/policies/presets/"
printf '{ "policy": "rel", "base": ["presets/pypi.json"], "rules": [] }\n' \
    >"$tmp/policies/rel.json"
based() {	# based FILE allow|deny HOST METHOD PATH WANT-TEXT
	local out rc
	out=$("$AL" policy test "$1" "$3" "$4" "$5" 2>&1)
	rc=$?
	is "$rc" "$([ "$2" = allow ] && echo 0 || echo 1)" "as a base: $4 $3$5 $2 ($out)"
	case $out in
	*"$6"*) ok 0 "  says: $6" ;;
	*) ok 1 "  says: $6 (got: $out)" ;;
	esac
}
"$AL" policy check "$tmp/own.json" >"$tmp/check" 2>&1
ok $? "a policy on every preset loads"
is "$(grep -c '^    base ' "$tmp/check")" "$(ls $P/*.json | wc -l)" \
    "  policy check lists each preset as a base"
based "$tmp/own.json" allow registry.npmjs.org GET /left-pad \
    "rule=npm-registry tls=inspect file=$top/$P/npm.json"
based "$tmp/own.json" deny registry.npmjs.org PUT /left-pad \
    "reason=method_not_allowed rule=npm-registry file=$top/$P/npm.json"
based "$tmp/own.json" deny registry.npmjs.org GET /evil-pkg/-/evil-pkg-1.0.0.tgz \
    "reason=denied_by_rule rule=no-evil-pkg file=$tmp/own.json"
based "$tmp/own.json" allow api.openai.com POST /v1/chat/completions \
    "rule=openai-key tls=inspect file=$tmp/own.json"
based "$tmp/own.json" allow files.pythonhosted.org GET /packages/x.whl \
    "file=$top/$P/pypi.json"
based "$tmp/own.json" deny evil.example.com GET / "reason=name_not_allowed"
based "$tmp/policies/rel.json" allow pypi.org GET /simple/requests/ \
    "file=$tmp/policies/presets/pypi.json"

for f in $P/*.json; do
	b=$(basename "$f" .json)
	case " $tested " in
	*" $b "*) ;;
	*) ok 1 "preset $b has no allowed URL in this test" ;;
	esac
done
done_testing
