/*
 * vault/vault_ca_cache.c: the bounded LRU of minted leaves (include/ca.h), so that a
 * new connection to a name already seen costs no signature.
 *
 * A chained hash table (seeded FNV-1a: names under a policy wildcard are chosen by
 * the VM, so bucket positions must not be predictable) plus a doubly linked list in
 * use order.  Every operation holds one mutex; they are all O(1) expected and short
 * (no signing under the lock: ca_leaf_get mints outside it).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>
#include <openssl/x509.h>

#include "ca.h"
#include "hostname.h"

struct ca_leaf {
	char		 cl_name[HOSTNAME_MAX + 1];
	X509		*cl_x509;
	time_t		 cl_expires;	/* notAfter - CA_LEAF_REFRESH */
	struct ca_leaf	*cl_hnext;	/* bucket chain */
	struct ca_leaf	*cl_prev;	/* LRU: toward most recent */
	struct ca_leaf	*cl_next;	/* LRU: toward least recent */
};

struct ca_leaf_cache {
	pthread_mutex_t	 lc_mtx;
	struct ca_leaf	**lc_buckets;
	size_t		 lc_nbuckets;	/* a power of two */
	size_t		 lc_n;
	size_t		 lc_max;
	uint64_t	 lc_seed;
	struct ca_leaf	*lc_head;	/* most recently used */
	struct ca_leaf	*lc_tail;	/* least recently used */
};

static size_t
ca_leaf_hash(const struct ca_leaf_cache *c, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ c->lc_seed;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 29;
	return (size_t)h & (c->lc_nbuckets - 1);
}

struct ca_leaf_cache *
ca_leaf_cache_new(size_t max)
{
	struct ca_leaf_cache *c;
	size_t nb = 16;

	if (max == 0 || max > (1U << 24))
		return NULL;
	while (nb < max * 2)
		nb *= 2;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	if ((c->lc_buckets = calloc(nb, sizeof(*c->lc_buckets))) == NULL ||
	    RAND_bytes((unsigned char *)&c->lc_seed, sizeof(c->lc_seed)) != 1 ||
	    pthread_mutex_init(&c->lc_mtx, NULL) != 0) {
		free(c->lc_buckets);
		free(c);
		return NULL;
	}
	c->lc_nbuckets = nb;
	c->lc_max = max;
	return c;
}

static void
ca_leaf_unlink(struct ca_leaf_cache *c, struct ca_leaf *l)
{
	struct ca_leaf **pp;

	for (pp = &c->lc_buckets[ca_leaf_hash(c, l->cl_name)]; *pp != NULL;
	    pp = &(*pp)->cl_hnext)
		if (*pp == l) {
			*pp = l->cl_hnext;
			break;
		}
	if (l->cl_prev != NULL)
		l->cl_prev->cl_next = l->cl_next;
	else
		c->lc_head = l->cl_next;
	if (l->cl_next != NULL)
		l->cl_next->cl_prev = l->cl_prev;
	else
		c->lc_tail = l->cl_prev;
	c->lc_n--;
	X509_free(l->cl_x509);
	free(l);
}

static void
ca_leaf_to_front(struct ca_leaf_cache *c, struct ca_leaf *l)
{
	if (c->lc_head == l)
		return;
	/* Detach from the list (l has a predecessor, as it is not the head). */
	l->cl_prev->cl_next = l->cl_next;
	if (l->cl_next != NULL)
		l->cl_next->cl_prev = l->cl_prev;
	else
		c->lc_tail = l->cl_prev;
	l->cl_prev = NULL;
	l->cl_next = c->lc_head;
	c->lc_head->cl_prev = l;
	c->lc_head = l;
}

static struct ca_leaf *
ca_leaf_find(struct ca_leaf_cache *c, const char *name)
{
	struct ca_leaf *l;

	for (l = c->lc_buckets[ca_leaf_hash(c, name)]; l != NULL; l = l->cl_hnext)
		if (strcmp(l->cl_name, name) == 0)
			return l;
	return NULL;
}

void
ca_leaf_cache_free(struct ca_leaf_cache *c)
{
	if (c == NULL)
		return;
	while (c->lc_head != NULL)
		ca_leaf_unlink(c, c->lc_head);
	pthread_mutex_destroy(&c->lc_mtx);
	free(c->lc_buckets);
	free(c);
}

X509 *
ca_leaf_cache_get(struct ca_leaf_cache *c, const char *name, time_t now)
{
	struct ca_leaf *l;
	X509 *x = NULL;

	pthread_mutex_lock(&c->lc_mtx);
	if ((l = ca_leaf_find(c, name)) != NULL) {
		if (now >= l->cl_expires)
			ca_leaf_unlink(c, l);
		else if (X509_up_ref(l->cl_x509) == 1) {
			x = l->cl_x509;
			ca_leaf_to_front(c, l);
		}
	}
	pthread_mutex_unlock(&c->lc_mtx);
	return x;
}

int
ca_leaf_cache_put(struct ca_leaf_cache *c, const char *name, X509 *x)
{
	struct ca_leaf *l, *old;
	struct tm tm;
	time_t expires;
	size_t h;

	if (strlen(name) > HOSTNAME_MAX ||
	    ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1 ||
	    (expires = timegm(&tm)) == (time_t)-1)
		return -1;
	if ((l = calloc(1, sizeof(*l))) == NULL)
		return -1;
	if (X509_up_ref(x) != 1) {
		free(l);
		return -1;
	}
	snprintf(l->cl_name, sizeof(l->cl_name), "%s", name);
	l->cl_x509 = x;
	l->cl_expires = expires - CA_LEAF_REFRESH;
	pthread_mutex_lock(&c->lc_mtx);
	/* Two threads may mint the same name at once: the later one wins. */
	if ((old = ca_leaf_find(c, name)) != NULL)
		ca_leaf_unlink(c, old);
	while (c->lc_n >= c->lc_max && c->lc_tail != NULL)
		ca_leaf_unlink(c, c->lc_tail);
	h = ca_leaf_hash(c, name);
	l->cl_hnext = c->lc_buckets[h];
	c->lc_buckets[h] = l;
	l->cl_next = c->lc_head;
	if (c->lc_head != NULL)
		c->lc_head->cl_prev = l;
	c->lc_head = l;
	if (c->lc_tail == NULL)
		c->lc_tail = l;
	c->lc_n++;
	pthread_mutex_unlock(&c->lc_mtx);
	return 0;
}

size_t
ca_leaf_cache_count(struct ca_leaf_cache *c)
{
	size_t n;

	pthread_mutex_lock(&c->lc_mtx);
	n = c->lc_n;
	pthread_mutex_unlock(&c->lc_mtx);
	return n;
}

int
ca_leaf_get_fn(struct ca_leaf_cache *c, const char *name, ca_mint_fn mint,
    void *arg, X509 **out, char *err, size_t errlen)
{
	char norm[HOSTNAME_MAX + 1];
	int hr, rv;

	*out = NULL;
	if ((hr = hostname_normalize(name, strlen(name), norm)) != HOSTNAME_OK) {
		snprintf(err, errlen, "leaf name '%.253s': %s", name,
		    hostname_strerror(hr));
		return CA_ERR_NAME;
	}
	if ((*out = ca_leaf_cache_get(c, norm, time(NULL))) != NULL)
		return CA_OK;
	if ((rv = mint(arg, norm, out, err, errlen)) != CA_OK)
		return rv;
	/* A failure to cache costs a signature next time, nothing else. */
	(void)ca_leaf_cache_put(c, norm, *out);
	return CA_OK;
}

/* ca_leaf_get's minter: this process signs, with the CA's own key. */
struct ca_local_mint {
	const struct ca	*lm_ca;
	EVP_PKEY	*lm_key;
};

static int
ca_mint_local(void *arg, const char *name, X509 **out, char *err, size_t errlen)
{
	struct ca_local_mint *lm = arg;

	return ca_leaf_mint(lm->lm_ca, name, lm->lm_key, out, err, errlen);
}

int
ca_leaf_get(struct ca_leaf_cache *c, const struct ca *ca, const char *name,
    EVP_PKEY *leaf_key, X509 **out, char *err, size_t errlen)
{
	struct ca_local_mint lm = { ca, leaf_key };

	return ca_leaf_get_fn(c, name, ca_mint_local, &lm, out, err, errlen);
}
