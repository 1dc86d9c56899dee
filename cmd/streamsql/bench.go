package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsql/streamsql/bench/harness"
	"github.com/streamsql/streamsql/bench/nexmark"
)

const benchNexmarkLong = `Run the Nexmark queries of bench/nexmark (Flink's query files) as benchmark
jobs: each on the nexmark source into its blackhole sink, at each parallelism,
with a checkpoint every --checkpoint-interval (state.backend.type pebble, a
real checkpoint directory) and again with checkpoints off. Every run is a
process of its own; its CPU (user + system) and peak RSS are its own.

The table (Markdown) gives per run: events/s (wall), events per CPU-second
of the whole process, the same without the generator's CPU (the time the
nexmark source spends building batches, measured on its thread's CPU
clock), the generator's and the kernel's (sys) share of the CPU, peak RSS,
the checkpoints (count, p50/p99 end-to-end duration, last size), events per
CPU-second with checkpoints off and the overhead (also read from each run's
CPU per generator CPU, which follows the machine's speed), the speed-up of
p2 over p1, the ratio to the hand-written reference kernel (bench/reference:
q1, q2, q5, q17), issue 11's floor and Flink 2.0's published per-core
figure.`

const benchNexmarkExample = `  streamsql bench nexmark                          # every query, p1 and p2, 1 s checkpoints and off
  streamsql bench nexmark --queries q1,q5 --events 2000000 -p 1
  streamsql bench nexmark --scale 10 --queries q17 --no-baseline   # a 10x longer run (RSS)
  streamsql bench nexmark --json results.json`

func newBenchCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks (Nexmark)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchNexmarkCmd(e), newBenchRunOneCmd(e))
	return cmd
}

func newBenchNexmarkCmd(e *env) *cobra.Command {
	var (
		queries, pars, backend, dir, jsonOut, profDir string
		interval                                      time.Duration
		noBaseline, noReference, keep, unaligned      bool
		events, tps                                   int64
		scale                                         float64
		repeat                                        int
	)
	cmd := &cobra.Command{
		Use:     "nexmark [flags]",
		Short:   "Run the Nexmark queries with checkpoints on and off and print the figures",
		Long:    benchNexmarkLong,
		Example: benchNexmarkExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := harness.Config{Interval: interval, Baseline: !noBaseline, Events: events, Scale: scale,
				Backend: backend, Reference: !noReference, TPS: tps, Unaligned: unaligned}
			var err error
			if cfg.Queries, err = parseQueries(queries); err != nil {
				return usageError{err}
			}
			if cfg.Parallelism, err = parseInts(pars); err != nil {
				return usageError{fmt.Errorf("--parallelism: %v", err)}
			}
			if events < 0 || scale < 0 || tps < 0 {
				return usageError{fmt.Errorf("--events, --scale and --tps must not be negative")}
			}
			if repeat < 1 {
				return usageError{fmt.Errorf("--repeat must be at least 1")}
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "streamsql-bench-"); err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(dir)
				}
			}
			cfg.Dir = dir
			self, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			specs := cfg.Specs()
			fmt.Fprintf(e.stderr, "streamsql bench nexmark: %d runs, work directory %s\n", len(specs)*repeat, dir)
			var rounds [][]harness.Result
			for r := 0; r < repeat && ctx.Err() == nil; r++ {
				if repeat > 1 {
					fmt.Fprintf(e.stderr, "round %d of %d\n", r+1, repeat)
				}
				rounds = append(rounds, harness.RunAll(ctx, specs, func(ctx context.Context, sp harness.Spec) (harness.Result, error) {
					res, err := runChild(ctx, self, sp, profDir)
					if !keep {
						os.RemoveAll(sp.Dir)
					}
					return res, err
				}, e.stderr))
			}
			results := harness.Medians(rounds)
			medians := ""
			if repeat > 1 {
				medians = fmt.Sprintf(", each cell the median of %d runs", repeat)
			}
			mode := ""
			if unaligned {
				mode = ", unaligned"
			}
			fmt.Fprintf(e.stdout, "Nexmark, %s, GOMAXPROCS %d, checkpoints every %v%s (state.backend.type %s)%s\n\n",
				time.Now().UTC().Format("2006-01-02 15:04 UTC"), nproc(), interval, mode, orDefault(backend, "pebble"), medians)
			harness.Report(e.stdout, results)
			if jsonOut != "" {
				b, _ := json.MarshalIndent(results, "", "  ")
				if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				return exitCode(exitSIGINT)
			}
			for _, r := range results {
				if r.Err != "" {
					return exitCode(exitFailure)
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&queries, "queries", "all", "comma-separated `list` of queries (q0,q1,...) or all")
	fl.StringVarP(&pars, "parallelism", "p", "1,2", "comma-separated `list` of parallelisms")
	fl.DurationVar(&interval, "checkpoint-interval", time.Second, "checkpoint interval of the checkpointed runs (0: checkpoints off only)")
	fl.BoolVar(&noBaseline, "no-baseline", false, "skip the runs with checkpoints off")
	fl.BoolVar(&noReference, "no-reference", false, "skip the reference kernels")
	fl.Int64Var(&events, "events", 0, "events per run (`N`; default: per query, sized for 20-40 s a query: four runs)")
	fl.Float64Var(&scale, "scale", 0, "multiply every run's events by `F`")
	fl.BoolVar(&unaligned, "unaligned", false, "unaligned checkpoints (execution.checkpointing.unaligned.enabled) in the runs with checkpoints")
	fl.Int64Var(&tps, "tps", 0, "events per second of event time (`N`, the source's first-event.rate; default the benchmark's 10,000,000: windows of seconds fire every 10 M events)")
	fl.StringVar(&backend, "state-backend", "pebble", "state.backend.type of the jobs: pebble, rocksdb or hashmap")
	fl.StringVar(&dir, "dir", "", "work `directory` (checkpoints, q10's output); default a temporary one, removed at the end")
	fl.BoolVar(&keep, "keep", false, "keep each run's work directory")
	fl.StringVar(&profDir, "cpuprofile-dir", "", "write a CPU profile of every run into `DIR` (q5-p1-1s.prof, ...; go tool pprof FILE)")
	fl.StringVar(&jsonOut, "json", "", "also write the measures of the runs the table shows to `FILE` as JSON")
	fl.IntVar(&repeat, "repeat", 1, "run the whole benchmark `N` times and show each cell's median run (events per CPU-second)")
	return cmd
}

// newBenchRunOneCmd is the child process of `bench nexmark`: one run, its
// result as JSON on stdout.
func newBenchRunOneCmd(e *env) *cobra.Command {
	var spec, cpuProfile, traceFile string
	cmd := &cobra.Command{
		Use:    "run-one --spec JSON",
		Short:  "Run one benchmark run (the child process of bench nexmark)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var sp harness.Spec
			if err := json.Unmarshal([]byte(spec), &sp); err != nil {
				return usageError{fmt.Errorf("--spec: %v", err)}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stopProf, err := startProfiles(cpuProfile, "", traceFile)
			if err != nil {
				return usageError{err}
			}
			res, err := harness.RunOne(ctx, sp)
			if perr := stopProf(); perr != nil && err == nil {
				err = perr
			}
			if err != nil {
				return err
			}
			return json.NewEncoder(e.stdout).Encode(res)
		},
	}
	cmd.Flags().StringVar(&spec, "spec", "", "the run, as harness.Spec JSON")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `FILE`")
	cmd.Flags().StringVar(&traceFile, "trace", "", "write an execution trace of the run to `FILE` (go tool trace FILE)")
	return cmd
}

func runChild(ctx context.Context, self string, sp harness.Spec, profDir string) (harness.Result, error) {
	b, _ := json.Marshal(sp)
	args := []string{"bench", "run-one", "--spec", string(b)}
	if profDir != "" {
		if err := os.MkdirAll(profDir, 0o755); err != nil {
			return harness.Result{Spec: sp}, err
		}
		args = append(args, "--cpuprofile", filepath.Join(profDir, strings.ReplaceAll(sp.Label(), " ", "-")+".prof"))
	}
	c := exec.CommandContext(ctx, self, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return harness.Result{Spec: sp}, fmt.Errorf("%s", msg)
	}
	var res harness.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return harness.Result{Spec: sp}, fmt.Errorf("reading the run's result: %v (stdout %q)", err, out.String())
	}
	return res, nil
}

func parseQueries(s string) ([]string, error) {
	all := nexmark.Queries()
	if s == "" || s == "all" {
		return all, nil
	}
	var out []string
	for _, q := range strings.Split(s, ",") {
		q = strings.TrimSpace(q)
		found := false
		for _, a := range all {
			found = found || a == q
		}
		if !found {
			return nil, fmt.Errorf("--queries: no query %q in bench/nexmark (have %s)", q, strings.Join(all, ", "))
		}
		out = append(out, q)
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a parallelism (a whole number, at least 1)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func nproc() int { return runtime.GOMAXPROCS(0) }
