#include <curl/curl.h>

/* Typed, non-variadic wrappers: Swift cannot call the variadic curl_easy_setopt / curl_easy_getinfo. */

typedef size_t (*dfc_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
typedef int (*dfc_sshkey_callback)(CURL *easy, const struct curl_khkey *knownkey,
                                   const struct curl_khkey *foundkey, enum curl_khmatch match, void *clientp);
typedef curl_socket_t (*dfc_opensocket_callback)(void *clientp, curlsocktype purpose,
                                                 struct curl_sockaddr *address);

static inline CURLcode dfc_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode dfc_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode dfc_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode dfc_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode dfc_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode dfc_setopt_data_callback(CURL *h, CURLoption o, dfc_data_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode dfc_setopt_opensocket_callback(CURL *h, dfc_opensocket_callback v) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, v); }

static inline CURLcode dfc_setopt_sshkey_callback(CURL *h, dfc_sshkey_callback v) { return curl_easy_setopt(h, CURLOPT_SSH_KEYFUNCTION, v); }

static inline CURLcode dfc_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode dfc_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode dfc_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode dfc_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }


/* CURLMsg.data is a union: expose the result code for CURLMSG_DONE. */
static inline CURLcode dfc_msg_result(const CURLMsg *msg) { return msg->data.result; }
