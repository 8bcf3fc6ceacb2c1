/* Built against an installed libcohort (pkg-config), by install_check.sh:
 * proves the headers, the libraries and cohort.pc work outside the tree. */
#include <cohort/cohort.h>
#include <stdio.h>
#include <string.h>

int
main(void)
{
	cohort_conf *conf = cohort_conf_new();
	char err[256];
	if (!conf)
		return 1;
	if (cohort_conf_set(conf, "session.timeout.ms", "x", err, sizeof(err)) !=
		    COHORT_ERR__BAD_CONF ||
	    !strstr(err, "session.timeout.ms")) {
		fprintf(stderr, "bad value accepted\n");
		return 1;
	}
	printf("libcohort %s: %s\n", cohort_version(),
	       cohort_err_name(COHORT_ERR_FENCED_INSTANCE_ID));
	cohort_conf_free(conf);
	return 0;
}
