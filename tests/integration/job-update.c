/*
 * job-update: change a job's counts through libslurm, as a job owner's own
 * program can (scontrol refuses some values that slurmctld takes, e.g. a
 * node count whose top is 0: no top at all).  For the hostile-user tests.
 *
 *   job-update JOBID FIELD=VALUE...
 *
 * FIELD is min_nodes, max_nodes or num_tasks; VALUE a number, or
 * "infinite" for INFINITE.  Exits 0 when slurmctld took the change, 1 when
 * it refused it (its reason on stderr), 2 on bad arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

static int parse_value(const char *text, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!strcmp(text, "infinite")) {
		*out = INFINITE;
		return 0;
	}
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || end == text || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t) v;
	return 0;
}

int main(int argc, char **argv)
{
	job_desc_msg_t desc;
	uint32_t job_id;
	int i;

	if (argc < 3 || parse_value(argv[1], &job_id)) {
		fprintf(stderr, "usage: job-update JOBID FIELD=VALUE...\n");
		return 2;
	}
	slurm_init(NULL);
	slurm_init_job_desc_msg(&desc);
	desc.job_id = job_id;
	for (i = 2; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		uint32_t *field = NULL;
		size_t len = eq ? (size_t) (eq - argv[i]) : 0;

		if (len == 9 && !strncmp(argv[i], "min_nodes", len))
			field = &desc.min_nodes;
		else if (len == 9 && !strncmp(argv[i], "max_nodes", len))
			field = &desc.max_nodes;
		else if (len == 9 && !strncmp(argv[i], "num_tasks", len))
			field = &desc.num_tasks;
		if (!field || parse_value(eq + 1, field)) {
			fprintf(stderr, "job-update: %s: not min_nodes, max_nodes or num_tasks = a number\n", argv[i]);
			return 2;
		}
	}
	if (slurm_update_job(&desc) != SLURM_SUCCESS) {
		fprintf(stderr, "job-update: job %u: %s\n", job_id, slurm_strerror(errno));
		return 1;
	}
	return 0;
}
