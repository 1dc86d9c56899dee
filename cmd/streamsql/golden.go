package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamsql/streamsql/sqltests"
)

const testLong = `Test runs golden files: each *.sqltest file holds statements and the output
they must produce (datadriven format: a directive, its input, '----', the
expected output). A directory means every *.sqltest file below it.

By default every file also runs in variants (parallelism 1 and 4, batch sizes
1, 7 and 1024) that must give the same final results; --no-variants runs only
the canonical one. --rewrite replaces the expected output with the actual
output: review the diff before committing it.

Exit status: 0 when every case passes, 1 when one fails or a file cannot be
read, 2 for a bad command line.`

const testExample = `  # run the whole suite
  streamsql test sqltests/testdata

  # one file, showing every case
  streamsql test --verbose sqltests/testdata/basic.sqltest

  # regenerate the expected output after an intended change
  streamsql test --rewrite --no-variants sqltests/testdata/basic.sqltest`

func newTestCmd(e *env) *cobra.Command {
	var opts sqltests.Options
	var noVariants bool
	cmd := &cobra.Command{
		Use:     "test [flags] FILE|DIR...",
		Short:   "Run golden-file tests (*.sqltest)",
		Long:    testLong,
		Example: testExample,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Variants = !noVariants
			opts.Out = e.stdout
			failed, err := sqltests.RunFiles(args, opts)
			if err != nil {
				fmt.Fprintf(e.stderr, "streamsql test: %v\n", err)
				return exitCode(exitFailure)
			}
			if failed > 0 {
				fmt.Fprintf(e.stderr, "streamsql test: %s failed\n", plural(failed, "case"))
				return exitCode(exitFailure)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Rewrite, "rewrite", false, "replace the expected output of every case with the actual output")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "print every case with its output")
	cmd.Flags().BoolVar(&noVariants, "no-variants", false, "run only the canonical variant (parallelism 1, default batch size)")
	return cmd
}
