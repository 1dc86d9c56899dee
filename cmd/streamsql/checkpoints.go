package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/session"
)

const checkpointsLong = `Checkpoints lists the checkpoints under DIR, a state.checkpoints.dir (a path
or a file:// URI): one row per checkpoint of every job directory in it
(<DIR>/<job-id>/chk-<n>), ordered by job and checkpoint id.

  job id         the job's directory name (32 hex digits)
  checkpoint id  n of chk-<n>
  status         COMPLETED, or INCOMPLETE for a chk-<n> directory without a
                 valid _metadata (a checkpoint cut short by a crash or a
                 failure; it is never restored and is cleaned up later)
  completed at   when its _metadata was written (local time)
  size           bytes of every file the checkpoint references
  incremental    bytes this checkpoint added (files shared with earlier
                 checkpoints are not written again)
  duration       synchronous + asynchronous part, in milliseconds

DIR may also be one job's directory, to list only that job. Any row's job
directory or chk-<n> directory can be passed to 'streamsql run --from'.

Exit status: 0, 1 when DIR cannot be read, 2 for a bad command line.`

const checkpointsExample = `  # what is there to restore from?
  streamsql checkpoints /var/lib/streamsql/checkpoints

  # resume the job from its latest complete checkpoint
  streamsql run --from /var/lib/streamsql/checkpoints/4f1c0d2e9a8b7c6d5e4f3a2b1c0d9e8f jobs/counts.sql`

func newCheckpointsCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "checkpoints DIR",
		Short:   "List the checkpoints in a checkpoint directory",
		Long:    checkpointsLong,
		Example: checkpointsExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := listCheckpoints(args[0])
			if err != nil {
				fmt.Fprintf(e.stderr, "streamsql checkpoints: %v\n", err)
				return exitCode(exitFailure)
			}
			return presentResult(e.stdout, res)
		},
	}
}

// listCheckpoints lists a checkpoint root, or a single job directory.
func listCheckpoints(arg string) (*session.Result, error) {
	dir, err := checkpoint.LocalPath(arg)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return nil, fmt.Errorf("%s: no such directory (give the state.checkpoints.dir of the jobs)", arg)
	case err != nil:
		return nil, err
	case !st.IsDir():
		return nil, fmt.Errorf("%s: not a directory (give the state.checkpoints.dir of the jobs)", arg)
	}
	dir = filepath.Clean(dir)
	root, only := dir, ""
	if checkpoint.ValidJobID(filepath.Base(dir)) {
		root, only = filepath.Dir(dir), filepath.Base(dir)
	}
	jobs, err := checkpoint.List(root)
	if err != nil {
		return nil, err
	}
	if only != "" {
		var keep []checkpoint.JobCheckpoints
		for _, j := range jobs {
			if j.JobID == only {
				keep = append(keep, j)
			}
		}
		jobs = keep
	}
	return session.CheckpointsTable(jobs), nil
}
