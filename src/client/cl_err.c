/*
 * cl_err.c: cohort_err names, texts and classes. Kafka's codes come from
 * the generated table (proto/generated/ch_errors.c, Errors.java); the local
 * range is listed here.
 */
#include <stdbool.h>

#include "cohort/cohort.h"
#include "proto/generated/ch_errors.h"

static const struct {
	cohort_err err;
	bool retriable;
	const char *name, *text;
} local[] = {
	{COHORT_ERR__BAD_CONF, false, "_BAD_CONF", "Invalid configuration"},
	{COHORT_ERR__INVALID_ARG, false, "_INVALID_ARG", "Invalid argument"},
	{COHORT_ERR__NOMEM, false, "_NOMEM", "Out of memory"},
	{COHORT_ERR__TIMED_OUT, true, "_TIMED_OUT", "The operation timed out"},
	{COHORT_ERR__TRANSPORT, true, "_TRANSPORT", "Broker connection failed or was lost"},
	{COHORT_ERR__CLOSED, false, "_CLOSED", "The handle is closed"},
	{COHORT_ERR__STATE, false, "_STATE", "Not allowed in the current state"},
	{COHORT_ERR__BAD_MSG, false, "_BAD_MSG", "A response or record did not decode"},
	{COHORT_ERR__NO_COMMON_VERSION, false, "_NO_COMMON_VERSION",
	 "The broker supports no version of a required API that libcohort supports"},
	{COHORT_ERR__ASSIGNMENT_LOST, false, "_ASSIGNMENT_LOST",
	 "The partitions were lost: this member is no longer their owner"},
	{COHORT_ERR__UNKNOWN_PARTITION, false, "_UNKNOWN_PARTITION",
	 "The partition is not assigned to this consumer"},
	{COHORT_ERR__REBALANCE_FAILED, true, "_REBALANCE_FAILED",
	 "The group rebalance did not complete"},
	{COHORT_ERR__OFFSET_OUT_OF_RANGE, false, "_OFFSET_OUT_OF_RANGE",
	 "Fetch position out of range and auto.offset.reset is none"},
	{COHORT_ERR__UNSUPPORTED, false, "_UNSUPPORTED", "Not implemented by libcohort"},
	{COHORT_ERR__SYSTEM, false, "_SYSTEM", "A system call failed"},
	{COHORT_ERR__WAKEUP, false, "_WAKEUP", "The call was woken up by cohort_wakeup"},
	{COHORT_ERR__QUEUE_FULL, true, "_QUEUE_FULL",
	 "The producer's buffer.memory is used up (max.block.ms passed)"},
	{COHORT_ERR__FATAL, false, "_FATAL", "The producer stopped on a fatal error"},
	{COHORT_ERR__SSL, false, "_SSL", "SSL handshake failed"},
};

/* The index in local[] of the libcohort-local error err, or -1 when it has none. */
static int
local_index(cohort_err err)
{
	for (unsigned i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		if (local[i].err == err)
			return (int)i;
	return -1;
}

const char *
cohort_version(void)
{
	return COHORT_VERSION_STR;
}

const char *
cohort_err_name(cohort_err err)
{
	if (err <= -100) {
		int i = local_index(err);
		return i < 0 ? "UNKNOWN" : local[i].name;
	}
	if (err > INT16_MAX)
		return "UNKNOWN";
	return ch_kerr_name((int16_t)err);
}

const char *
cohort_err_str(cohort_err err)
{
	if (err == COHORT_OK)
		return "Success";
	if (err <= -100) {
		int i = local_index(err);
		return i < 0 ? "Unknown error" : local[i].text;
	}
	if (err > INT16_MAX)
		return "Unknown error";
	const char *m = ch_kerr_message((int16_t)err);
	return m && *m ? m : "Unknown error";
}

int
cohort_err_is_retriable(cohort_err err)
{
	if (err <= -100) {
		int i = local_index(err);
		return i >= 0 && local[i].retriable;
	}
	return err > 0 && err <= INT16_MAX && ch_kerr_retriable((int16_t)err);
}

int
cohort_err_is_fatal(cohort_err err)
{
	switch (err) {
	case COHORT_ERR_FENCED_INSTANCE_ID:
	case COHORT_ERR_UNRELEASED_INSTANCE_ID:
	case COHORT_ERR_UNSUPPORTED_ASSIGNOR:
	case COHORT_ERR_GROUP_AUTHORIZATION_FAILED:
	case COHORT_ERR_INVALID_GROUP_ID:
	case COHORT_ERR_UNSUPPORTED_VERSION:
	case COHORT_ERR_GROUP_MAX_SIZE_REACHED:
	case COHORT_ERR_INVALID_REGULAR_EXPRESSION:
	case COHORT_ERR_INCONSISTENT_GROUP_PROTOCOL:
	case COHORT_ERR_INVALID_SESSION_TIMEOUT:
	case COHORT_ERR__NO_COMMON_VERSION:
	case COHORT_ERR__NOMEM:
	case COHORT_ERR__SYSTEM:
	case COHORT_ERR__SSL:
	case COHORT_ERR_SASL_AUTHENTICATION_FAILED:
	case COHORT_ERR_UNSUPPORTED_SASL_MECHANISM:
	case COHORT_ERR_ILLEGAL_SASL_STATE:
		return 1;
	default:
		return 0;
	}
}
