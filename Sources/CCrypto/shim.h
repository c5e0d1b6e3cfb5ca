#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

/* HMAC-SHA256 (RFC 2104) with the key's padded blocks absorbed once: the SHA256_CTX values are
   plain memory, copied per message, so a seal costs the message's blocks and one more, not four.
   The low-level SHA256 calls are deprecated in OpenSSL 3 but kept; EVP has no way to copy a
   context without allocating one. */
static inline void dfl_sha256_absorbed(const unsigned char *block, size_t length, SHA256_CTX *state) {
    SHA256_Init(state);
    SHA256_Update(state, block, length);
}

static inline void dfl_hmac_sha256_seal(const SHA256_CTX *inner, const SHA256_CTX *outer,
                                        const unsigned char *message, size_t length, unsigned char *mac) {
    SHA256_CTX state = *inner;
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256_Update(&state, message, length);
    SHA256_Final(digest, &state);
    state = *outer;
    SHA256_Update(&state, digest, sizeof digest);
    SHA256_Final(mac, &state);
}

/* SHA-256 of one buffer on a context on the stack: no EVP context allocated and no algorithm
   fetched (OpenSSL 3's SHA256(3) does both, through EVP_Digest), for the done index's URL keys. */
static inline void dfl_sha256(const unsigned char *data, size_t length, unsigned char *digest) {
    SHA256_CTX state;
    SHA256_Init(&state);
    SHA256_Update(&state, data, length);
    SHA256_Final(digest, &state);
}
