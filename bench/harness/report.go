package harness

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Config is a whole benchmark: every query at every parallelism, with
// checkpoints every Interval and off.
type Config struct {
	Queries     []string
	Parallelism []int
	Interval    time.Duration // 0: only runs with checkpoints off
	Baseline    bool          // also run with checkpoints off
	Events      int64         // 0: DefaultEvents(query)
	Scale       float64       // multiplies the events (0: 1)
	Backend     string
	Dir         string // each run gets a fresh subdirectory
	Reference   bool   // run the reference kernels where there is one
	TPS         int64  // events per second of event time (0: the benchmark's)
	Unaligned   bool   // unaligned checkpoints
}

// Specs lists the runs of cfg in the order they run.
func (cfg Config) Specs() []Spec {
	var out []Spec
	n := 0
	for _, q := range cfg.Queries {
		ev := cfg.Events
		if ev <= 0 {
			ev = DefaultEvents(q)
		}
		if cfg.Scale > 0 {
			ev = int64(float64(ev) * cfg.Scale)
		}
		dir := func() string { n++; return fmt.Sprintf("%s/run-%03d", cfg.Dir, n) }
		for _, p := range cfg.Parallelism {
			if cfg.Interval > 0 {
				out = append(out, Spec{Query: q, Parallelism: p, Interval: cfg.Interval, Events: ev, Backend: cfg.Backend, TPS: cfg.TPS, Unaligned: cfg.Unaligned, Dir: dir()})
			}
			if cfg.Baseline || cfg.Interval <= 0 {
				out = append(out, Spec{Query: q, Parallelism: p, Events: ev, Backend: cfg.Backend, TPS: cfg.TPS, Dir: dir()})
			}
		}
		if cfg.Reference && hasReference(q) && cfg.TPS == 0 { // the kernels run at the benchmark's rate
			out = append(out, Spec{Query: q, Parallelism: 1, Events: ev, Reference: true, Dir: dir()})
		}
	}
	return out
}

// RunAll runs every spec with run (in a child process) and logs a line per
// run to progress. A failed run is kept with its error; the others go on.
func RunAll(ctx context.Context, specs []Spec, run func(context.Context, Spec) (Result, error), progress io.Writer) []Result {
	var out []Result
	for i, sp := range specs {
		if ctx.Err() != nil {
			break
		}
		r, err := run(ctx, sp)
		r.Spec = sp
		if err != nil {
			r.Err = err.Error()
			fmt.Fprintf(progress, "[%d/%d] %s: FAILED: %v\n", i+1, len(specs), sp.Label(), err)
		} else {
			fmt.Fprintf(progress, "[%d/%d] %s: %s events/s, %s events/cpu-s, %.1f s\n", i+1, len(specs), sp.Label(),
				si(r.EventsPerSec()), si(r.EventsPerCPU()), r.Wall.Seconds())
		}
		out = append(out, r)
	}
	return out
}

// Medians picks, for each spec, one of its runs in rounds (each round the
// results of the same specs in order; a round cut short by cancellation
// may be shorter): a failed run if any (a failure must show), else the run
// of the median events per CPU-second (of an even count, the faster of the
// middle two). With rounds spread over the whole benchmark, a cell no
// longer depends on one minute of the machine's speed.
func Medians(rounds [][]Result) []Result {
	if len(rounds) == 0 {
		return nil
	}
	var out []Result
	for i := range rounds[0] {
		var runs []Result
		for _, r := range rounds {
			if i < len(r) {
				runs = append(runs, r[i])
			}
		}
		pick := -1
		for k, r := range runs {
			if r.Err != "" {
				pick = k
				break
			}
		}
		if pick < 0 {
			sort.SliceStable(runs, func(a, b int) bool { return runs[a].EventsPerCPU() > runs[b].EventsPerCPU() })
			pick = (len(runs) - 1) / 2
		}
		out = append(out, runs[pick])
	}
	return out
}

// Label names a run: "q5 p2 ckpt 1s", "q5 p1 off", "q5 reference".
func (sp Spec) Label() string {
	if sp.Reference {
		return sp.Query + " reference"
	}
	mode := "off"
	if sp.Interval > 0 {
		mode = "ckpt " + sp.Interval.String()
	}
	return fmt.Sprintf("%s p%d %s", sp.Query, sp.Parallelism, mode)
}

// Floors are issue 11's floors: events per CPU-second of the whole
// process, checkpoints every 1 s.
var Floors = map[string]float64{
	"q0": 2e6, "q1": 2e6, "q2": 2e6, "q17": 800e3,
	"q5": 500e3, "q7": 500e3, "q8": 500e3,
	"q3": 200e3, "q20": 200e3, "q19": 200e3,
}

// Flink20 is the Flink 2.0 per-core figure of the Nexmark GUIDE_V2
// (../shared/design/nexmark.md): an anchor on other hardware, not a
// side-by-side result.
var Flink20 = map[string]float64{
	"q0": 378e3, "q1": 395e3, "q2": 414e3, "q3": 219e3, "q4": 28e3, "q5": 74.5e3,
	"q7": 22.9e3, "q8": 162e3, "q17": 161e3, "q19": 42.7e3, "q20": 17.8e3,
}

type key struct {
	q    string
	p    int
	ckpt bool
}

// Report prints the results as a Markdown table: one row per query and
// parallelism with the checkpointed run's figures, the run without
// checkpoints beside it (the overhead), the scaling from p1 and the ratio
// to the reference kernel.
func Report(w io.Writer, results []Result) {
	by := map[key]Result{}
	ref := map[string]Result{}
	var order []key
	for _, r := range results {
		if r.Spec.Reference {
			ref[r.Spec.Query] = r
			continue
		}
		k := key{r.Spec.Query, r.Spec.Parallelism, r.Spec.Interval > 0}
		if _, ok := by[key{k.q, k.p, true}]; !ok {
			if _, ok := by[key{k.q, k.p, false}]; !ok {
				order = append(order, key{k.q, k.p, false})
			}
		}
		by[k] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row(tw, []string{"query", "p", "events", "events/s", "events/cpu-s", "without generator", "generator", "sys", "peak RSS", "checkpoints", "p50 / p99 ms", "last size", "off: events/cpu-s", "overhead", "overhead per gen. CPU", "p2/p1", "p2 / p1 core", "reference ratio", "floor", "Flink 2.0/core"})
	row(tw, strings.Split(strings.Repeat("---,", 19)+"---", ","))
	for _, k := range order {
		on, hasOn := by[key{k.q, k.p, true}]
		off, hasOff := by[key{k.q, k.p, false}]
		main := on
		if !hasOn {
			main = off
		}
		cells := []string{k.q, fmt.Sprint(k.p), si(float64(main.Spec.Events))}
		if main.Err != "" {
			cells = append(cells, "FAILED: "+firstLine(main.Err))
			for len(cells) < 20 {
				cells = append(cells, "")
			}
			row(tw, cells)
			continue
		}
		cpu := main.CPU()
		cells = append(cells, si(main.EventsPerSec()), si(main.EventsPerCPU()), si(main.EventsPerEngineCPU()),
			pct(main.GenCPU, cpu), pct(main.Sys, cpu), fmt.Sprintf("%d MiB", main.PeakRSS>>20))
		if hasOn {
			cells = append(cells, fmt.Sprint(on.Checkpoints), fmt.Sprintf("%.0f / %.0f", on.P50MS, on.P99MS), bytes(on.LastSize))
		} else {
			cells = append(cells, "off", "", "")
		}
		if hasOn && hasOff && off.Err == "" {
			cells = append(cells, si(off.EventsPerCPU()), fmt.Sprintf("%+.0f%%", 100*(1-on.EventsPerCPU()/off.EventsPerCPU())))
			// the same from the process's CPU per generator CPU: the
			// generator's work per event is the same in both runs, so it
			// gauges the machine's speed in each (single runs' events per
			// CPU-second swing by 30% from one minute to the next)
			genOverhead := ""
			if on.GenCPU > 0 && off.GenCPU > 0 && off.CPU() > 0 {
				r := (float64(on.CPU()) / float64(on.GenCPU)) / (float64(off.CPU()) / float64(off.GenCPU))
				genOverhead = fmt.Sprintf("%+.0f%%", 100*(r-1))
			}
			cells = append(cells, genOverhead)
		} else {
			cells = append(cells, "", "", "")
		}
		// p2/p1: wall-clock speed-up; p2 / p1 core: events/s at p2 over
		// events per CPU-second at p1, i.e. how many cores' worth of the
		// p1 run's work per CPU-second p2 delivers (p1 itself uses more
		// than one core: the source and the operators run apart).
		scale, cores := "", ""
		if k.p > 1 {
			if p1, ok := by[key{k.q, 1, hasOn}]; ok && p1.Err == "" && p1.EventsPerSec() > 0 {
				scale = fmt.Sprintf("%.2fx", main.EventsPerSec()/p1.EventsPerSec())
				if p1.EventsPerCPU() > 0 {
					cores = fmt.Sprintf("%.2f cores", main.EventsPerSec()/p1.EventsPerCPU())
				}
			}
		}
		cells = append(cells, scale, cores)
		ratio := ""
		if r, ok := ref[k.q]; ok && k.p == 1 && r.Err == "" && r.EventsPerCPU() > 0 {
			ratio = fmt.Sprintf("%.2f (%s)", main.EventsPerCPU()/r.EventsPerCPU(), si(r.EventsPerCPU()))
		} else if ok && k.p == 1 && r.Err != "" {
			ratio = "FAILED: " + firstLine(r.Err)
		}
		cells = append(cells, ratio)
		floor := ""
		if f, ok := Floors[k.q]; ok && k.p == 1 && hasOn {
			verdict := "met"
			if main.EventsPerCPU() < f {
				verdict = "below"
			}
			floor = si(f) + " " + verdict
		}
		cells = append(cells, floor)
		anchor := ""
		if f, ok := Flink20[k.q]; ok {
			anchor = si(f)
		}
		cells = append(cells, anchor)
		row(tw, cells)
	}
	tw.Flush()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// si formats a count with K/M suffixes: 1.23 M, 456 K.
func si(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2f M", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.0f K", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

func pct(part, whole time.Duration) string {
	if whole <= 0 || part <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*part.Seconds()/whole.Seconds())
}

func bytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// row writes one Markdown table row, its cells aligned by tw.
func row(tw *tabwriter.Writer, cells []string) {
	for _, c := range cells {
		fmt.Fprintf(tw, "| %s \t", c)
	}
	fmt.Fprintln(tw, "|")
}
