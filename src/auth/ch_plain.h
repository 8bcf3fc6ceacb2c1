/*
 * ch_plain: SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer checks it, and
 * its users from a JAAS configuration line, as Kafka's broker reads them:
 *
 *   listener.name.NAME.plain.sasl.jaas.config=\
 *     org.apache.kafka.common.security.plain.PlainLoginModule required \
 *     username="admin" password="admin-secret" \
 *     user_admin="admin-secret" user_alice="alice-secret";
 *
 * Every user_NAME="password" option is a user; username/password (Kafka's
 * inter-broker login) are accepted and not used. Pure.
 */
#ifndef CH_PLAIN_H
#define CH_PLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ch_plain_user {
	char *name;
	char *password;
} ch_plain_user;

typedef struct ch_plain_users {
	ch_plain_user *v;
	size_t n;
} ch_plain_users;

/* Parses a PlainLoginModule JAAS line into out (freed with
 * ch_plain_users_free, also after an error). 0, or -1 and why. */
int ch_plain_users_parse(const char *jaas, ch_plain_users *out, char *why, size_t whylen);
void ch_plain_users_free(ch_plain_users *u);

/* Checks one PLAIN message (authzid NUL user NUL password) against users.
 * 0 and the user name in user (cap bytes), or -1 and Kafka's message for
 * the client in *msg ("Authentication failed: Invalid username or
 * password", ...). Passwords are compared in constant time. */
int ch_plain_check(const ch_plain_users *users, const uint8_t *msg, size_t n, char *user,
		   size_t cap, const char **msg_out);

#endif
