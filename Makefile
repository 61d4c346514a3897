# airlock: one non-recursive Makefile.
#
# Each part is a static archive built from every .c file in its folder, so adding a
# file never needs an edit here.  Dependencies point one way: DEPS below is the one
# statement of the direction (README.md draws it), make check-deps enforces it.
#
#   make            build airlock and airlockd
#   make check      install packages (make deps), build, run every TAP test under prove
#   make SAN=1 ...  the same with AddressSanitizer + UBSan
#   make check-deps every #include "..." against DEPS (tests/check-deps.sh)
#   make fuzz       libFuzzer binaries (clang) for every tests/fuzz/fuzz_*.c
#   make fuzz-long  long fuzzing runs that add up (tests/fuzz/RESULTS.md)
#   make guest      the default VM image (build/guest: kernel + initramfs)
#   make deps       install the Debian packages the build, tests and demo need
#   make man        the man pages in $(O)/man, from the markdown references
#                   (docs/md2man.pl): airlock.1, airlockd.8, airlock.json.5,
#                   airlock-policy.5
#   make install    [PREFIX=/usr/local] [DESTDIR=]: binaries, the configuration (kept
#                   when there is one), policies, the guest image, the audit view's
#                   web files, the man pages,
#                   the systemd unit and tmpfiles; make uninstall removes them (a
#                   changed config stays)

CC	?= gcc
SAN	?= 0
O	?= build
ifeq ($(SAN),1)
O	:= build-san
endif

PKGS	:= libevent libevent_openssl libevent_pthreads openssl jansson libnftnl libmnl libvirt \
	   libpsl libnghttp2 libseccomp

WARN	:= -Wall -Wextra -Wshadow -Wpointer-arith -Wcast-qual -Wstrict-prototypes \
	   -Wmissing-prototypes -Wformat=2 -Wno-unused-parameter -Werror
CFLAGS	?= -O2 -g
ifeq ($(SAN),1)
CFLAGS	:= -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined
LDFLAGS	+= -fsanitize=address,undefined
HARDEN	:= -fstack-protector-strong
# The seccomp filters also let the sanitizers' own system calls through
# (proxy/proxy_confine.c); only this build has it.
SANDEF	:= -DAIRLOCK_SAN
else
HARDEN	:= -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fPIE
LDFLAGS	+= -pie -Wl,-z,relro,-z,now
endif
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(HARDEN) $(SANDEF) $(CFLAGS) -Iinclude \
	     $(PKG_CFLAGS)

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread

# The dependency direction, stated once (make check-deps checks every #include "..."
# against it; README's Layout section says the same in words).  One word per part,
# PART:USES, where USES are the parts PART builds on directly, comma-separated.  A
# part may include its own private headers (PART/...) and the public headers of
# itself and of the parts below it (reachable through these arrows), nothing else.
DEPS	:= lib: policies:lib audit:policies netctl:audit vault:audit vmm:vault \
	   proxy:netctl,vault cli:netctl,vault,vmm
# Which part each public header (include/H) belongs to: PART:H,H,...
HEADERS	:= lib:config.h,control.h,file.h,hexdig.h,hostname.h,log.h,netaddr.h,sandbox.h,siphash.h,strtab.h,version.h,jsonpath.h,upstream.h \
	   policies:policy.h audit:audit.h netctl:netctl.h vault:ca.h,vault.h vmm:vmm.h

# Parts, in link order: each before the parts below it (check-deps checks it).
PARTS	:= cli proxy vmm netctl vault audit policies lib
define part_srcs
$(filter-out $(1)/main.c,$(wildcard $(1)/*.c))
endef
define part_lib
$(O)/lib$(1).a
endef
LIBS	:= $(foreach p,$(PARTS),$(call part_lib,$(p)))

BINS	:= $(O)/airlock $(O)/airlockd
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_TS	:= $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/unit/%.t)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_REPLAY := $(FUZZ_SRCS:tests/fuzz/%.c=$(O)/tests/fuzz/%.t)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(O)/fuzz/%)
# Small programs the integration tests drive (listeners, generators): tests/tools/*.c
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOLS	:= $(TOOL_SRCS:tests/tools/%.c=$(O)/tests/tools/%)

# The audit view's web files (airlock audit serve), copied beside the binaries as
# the guest image is, so the built airlock finds them as the installed one does.
WEB_SRCS := $(wildcard web/*.html web/*.css web/*.js web/*.png)
WEB	:= $(WEB_SRCS:web/%=$(O)/web/%)

all: $(BINS) $(WEB) airlock airlockd

$(O)/web/%: web/%
	@mkdir -p $(dir $@)
	cp $< $@

# Convenience links at the top so README commands stay short.
airlock airlockd: %: $(O)/%
	@ln -sf $(O)/$@ $@

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

define part_rules
$(call part_lib,$(1)): $(patsubst %.c,$(O)/%.o,$(call part_srcs,$(1)))
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	$$(if $$^,$$(AR) rcs $$@ $$^,printf '!<arch>\n' > $$@)
endef
$(foreach p,$(PARTS),$(eval $(call part_rules,$(p))))

$(O)/airlock: $(O)/cli/main.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBS) $(PKG_LIBS)

$(O)/airlockd: $(O)/proxy/main.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBS) $(PKG_LIBS)

$(O)/tests/tap.o: tests/tap.c

$(O)/tests/unit/%.t: $(O)/tests/unit/%.o $(O)/tests/tap.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(O)/tests/tap.o $(LIBS) $(PKG_LIBS)

# Fuzz targets replay their seed corpus under gcc as TAP tests.
$(O)/tests/fuzz/%.t: $(O)/tests/fuzz/%.o $(O)/tests/fuzz/replay.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(O)/tests/fuzz/replay.o $(LIBS) $(PKG_LIBS)

$(O)/tests/fuzz/replay.o: tests/fuzz/replay.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(O)/tests/tools/%: $(O)/tests/tools/%.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBS) $(PKG_LIBS)

tests: $(UNIT_TS) $(FUZZ_REPLAY) $(TOOLS) $(BINS) all man

# The TAP suite: unit tests (no privileges), fuzz corpus replays, integration tests
# (network namespaces; they skip themselves when not root).
check: deps
	$(MAKE) check-deps
	$(MAKE) tests guest
	AIRLOCK_BUILD=$(CURDIR)/$(O) AIRLOCK_SRCDIR=$(CURDIR) AIRLOCK=$(CURDIR)/$(O)/airlock AIRLOCKD=$(CURDIR)/$(O)/airlockd \
	    prove -r $(PROVE_FLAGS) $(O)/tests tests/integration tests/vm

# The include direction (DEPS, HEADERS, PARTS above); its self-test is
# tests/integration/check_deps.t.
check-deps:
	sh tests/check-deps.sh '$(DEPS)' '$(HEADERS)' '$(PARTS)'

# The default guest image of `airlock vm start`: a Debian cloud kernel (downloaded,
# never installed) and a busybox + curl initramfs, in $(O)/guest beside the binaries
# (guest/build.sh says how).  Rebuilt only when its scripts change.
GUEST	:= $(O)/guest/vmlinux $(O)/guest/initrd.cpio
guest: $(GUEST)
$(GUEST) &: guest/build.sh guest/init
	sh guest/build.sh $(O)/guest

# libFuzzer builds (clang): make fuzz; then e.g. build/fuzz/fuzz_policy_json corpus/
# Every part but the CLI is compiled once with clang (coverage instrumented, ASan and
# UBSan) into $(O)/fuzzobj/, and each target is linked against those objects.
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(FUZZ_SAN) -Iinclude
FUZZ_PARTS := $(filter-out cli,$(PARTS))
FUZZ_OBJS := $(patsubst %.c,$(O)/fuzzobj/%.o,$(foreach p,$(FUZZ_PARTS),$(call part_srcs,$(p))))
fuzz: $(FUZZ_BINS)
$(O)/fuzzobj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -o $@ $< $(FUZZ_OBJS) \
	    $(PKG_LIBS)

# make fuzz-long [SECONDS=N] [TARGETS="fuzz_dns ..."]: every target (or those) for N
# CPU-seconds each (default 600), two at a time; corpus growth merged into
# tests/fuzz/corpus/, one line per run in tests/fuzz/results.tsv, totals in
# tests/fuzz/RESULTS.md (tests/fuzz/long.sh).
SECONDS	?= 600
fuzz-long: fuzz
	bash tests/fuzz/long.sh $(O) $(SECONDS) $(TARGETS)

# make bench [QUICK=1]: airlock side by side with nginx, HAProxy, Squid and mitmproxy
# in network namespaces (root; installs those peers itself).  bench/README.md.
bench: deps
	$(MAKE) $(BINS) $(O)/bench/idleconn
	AIRLOCK_BUILD=$(CURDIR)/$(O) QUICK=$(QUICK) bash bench/run.sh

$(O)/bench/idleconn: $(O)/bench/idleconn.o
	$(CC) $(LDFLAGS) -o $@ $< $(PKG_LIBS)

# make bench-scan: the scanner alone (bench/scanbench.c) side by side with Hyperscan,
# which bench/deps.sh installs (libhyperscan-dev; never make deps: only this target
# builds against it).  Results in bench/results/ (bench/scan.sh; bench/README.md).
bench-scan:
	sh bench/deps.sh libhyperscan-dev pkg-config
	$(MAKE) $(O)/bench/scanbench
	sh bench/scan.sh $(O)/bench/scanbench

$(O)/bench/scanbench: $(O)/bench/scanbench.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBS) $(PKG_LIBS) $$(pkg-config --libs libhs)

deps:
	@sh .ci/deps.sh

# The man pages, each made from its markdown reference by docs/md2man.pl (perl, core
# modules only).  For each PAGE (NAME.SECTION) of MANPAGES: MANSRC_PAGE, its source,
# and MANSUM_PAGE, the summary of its NAME line (no single quote in it).
VERSION	:= $(shell sed -n 's/.*AIRLOCK_VERSION[^"]*"\([^"]*\)".*/\1/p' include/version.h)
MANPAGES := $(O)/man/airlock.1 $(O)/man/airlockd.8 $(O)/man/airlock.json.5 \
	   $(O)/man/airlock-policy.5
MANSRC_airlock.1	:= docs/CLI.md
MANSUM_airlock.1	:= the airlock command line: sandboxes, VMs, policies, secrets, CAs, the audit log
MANSRC_airlockd.8	:= docs/AIRLOCKD.md
MANSUM_airlockd.8	:= the egress proxy daemon of airlock
MANSRC_airlock.json.5	:= docs/CONFIGURATION.md
MANSUM_airlock.json.5	:= the configuration file of airlockd and airlock
MANSRC_airlock-policy.5	:= policies/SCHEMA.md
MANSUM_airlock-policy.5	:= the policy files of airlock sandboxes
man: $(MANPAGES)
define man_rule
$(O)/man/$(1): $$(MANSRC_$(1)) docs/md2man.pl include/version.h
	@mkdir -p $$(@D)
	perl docs/md2man.pl $(basename $(1)) $(subst .,,$(suffix $(1))) \
	    '$$(MANSUM_$(1))' 'airlock $$(VERSION)' <$$(MANSRC_$(1)) >$$@.tmp
	mv $$@.tmp $$@
endef
$(foreach m,$(MANPAGES),$(eval $(call man_rule,$(notdir $(m)))))

# Installation.  The configuration is installed only where there is none (an
# operator's file is never overwritten) and removed only while it is the shipped one.
PREFIX	?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR	?= /lib/systemd/system
TMPFILESDIR ?= /usr/lib/tmpfiles.d
SHAREDIR = $(PREFIX)/share/airlock
DOCDIR	= $(PREFIX)/share/doc/airlock
MANDIR	= $(PREFIX)/share/man
install: all guest man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin \
	    $(DESTDIR)$(SHAREDIR)/policies/presets $(DESTDIR)$(SHAREDIR)/guest \
	    $(DESTDIR)$(SHAREDIR)/web \
	    $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(SYSCONFDIR)/airlock \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(TMPFILESDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(O)/airlock $(DESTDIR)$(PREFIX)/bin/airlock
	install -m 0755 $(O)/airlockd $(DESTDIR)$(PREFIX)/sbin/airlockd
	install -m 0644 policies/*.json policies/SCHEMA.md $(DESTDIR)$(SHAREDIR)/policies/
	install -m 0644 policies/presets/*.json $(DESTDIR)$(SHAREDIR)/policies/presets/
	install -m 0644 $(O)/guest/vmlinux $(O)/guest/initrd.cpio $(O)/guest/VERSION \
	    $(DESTDIR)$(SHAREDIR)/guest/
	install -m 0644 $(WEB_SRCS) $(DESTDIR)$(SHAREDIR)/web/
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	install -m 0644 $(filter %.1,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(filter %.5,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(filter %.8,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man8/
	[ -e $(DESTDIR)$(SYSCONFDIR)/airlock/airlock.json ] || \
	    install -m 0644 etc/airlock.json $(DESTDIR)$(SYSCONFDIR)/airlock/airlock.json
	sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' -e 's|@DOCDIR@|$(DOCDIR)|g' \
	    etc/airlockd.service >$(DESTDIR)$(UNITDIR)/airlockd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/airlockd.service
	install -m 0644 etc/airlock.tmpfiles $(DESTDIR)$(TMPFILESDIR)/airlock.conf

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/airlock $(DESTDIR)$(PREFIX)/sbin/airlockd \
	    $(DESTDIR)$(UNITDIR)/airlockd.service $(DESTDIR)$(TMPFILESDIR)/airlock.conf \
	    $(foreach m,$(notdir $(MANPAGES)),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m))
	rm -rf $(DESTDIR)$(SHAREDIR) $(DESTDIR)$(DOCDIR)
	if cmp -s etc/airlock.json $(DESTDIR)$(SYSCONFDIR)/airlock/airlock.json; then \
	    rm -f $(DESTDIR)$(SYSCONFDIR)/airlock/airlock.json; \
	    rmdir $(DESTDIR)$(SYSCONFDIR)/airlock 2>/dev/null || true; \
	fi

clean:
	rm -rf build build-san airlock airlockd

.PHONY: all check check-deps tests fuzz fuzz-long deps clean guest bench bench-scan install uninstall \
	man
.SECONDARY:

-include $(shell find $(O) -name '*.d' 2>/dev/null)

# The README's first command: an agent VM held by airlock, in network namespaces of its own.
demo: deps
	$(MAKE) all guest $(O)/tests/tools/origin
	AIRLOCK_BUILD=$(CURDIR)/$(O) demo/demo.sh
.PHONY: demo
