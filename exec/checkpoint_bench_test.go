package exec

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
)

// phasedSource emits one batch per phase: phase i holds keys [0, sizes[i]).
// In lockstep checkpointing each batch is followed by a checkpoint.
type phasedSource struct {
	sc    *SourceContext
	sizes []int
	phase int
}

func (s *phasedSource) SnapshotState() ([]byte, error) { return []byte{byte(s.phase)}, nil }
func (s *phasedSource) RestoreState(b []byte) error    { s.phase = int(b[0]); return nil }
func (s *phasedSource) Close() error                   { return nil }
func (s *phasedSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for ; s.phase < len(s.sizes); s.phase++ {
		kb := array.NewInt64Builder(s.sc.Mem)
		vb := array.NewInt64Builder(s.sc.Mem)
		for k := 0; k < s.sizes[s.phase]; k++ {
			kb.Append(int64(k))
			vb.Append(int64(s.phase + 1))
		}
		k, v := kb.NewArray(), vb.NewArray()
		kb.Release()
		vb.Release()
		rec := array.NewRecord(schema, []arrow.Array{k, v}, int64(k.Len()))
		k.Release()
		v.Release()
		s.phase++ // the state after this batch
		err := emit(rec)
		s.phase--
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkCheckpoint1MKeys measures checkpoints of a GROUP BY holding one
// million keys: the full first checkpoint (sync and async parts), an
// incremental one after 1% of the keys changed, and the restore of the
// whole state. Run: go test -run '^$' -bench Checkpoint1MKeys ./exec/
func BenchmarkCheckpoint1MKeys(b *testing.B) {
	const keys = 1_000_000
	for i := 0; i < b.N; i++ {
		store, err := checkpoint.Open(checkpoint.Options{Dir: b.TempDir(), JobID: strings.Repeat("ef", 16), NumRetained: 2})
		if err != nil {
			b.Fatal(err)
		}
		var infos []checkpoint.Info
		ck := &CheckpointConfig{Backend: store, TriggerEveryBatch: true, FirstID: 1,
			OnComplete: func(in checkpoint.Info) { infos = append(infos, in) }}
		sizes := []int{keys, keys / 100}
		cfg := JobConfig{BatchSize: keys, Checkpoint: ck, MaxParallelism: 128,
			NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
				return &phasedSource{sc: sc, sizes: sizes}, nil
			},
			NewSink: func(*catalog.Table, *SinkContext) (Sink, error) { return &funcSink{write: func(Batch) {}}, nil }}
		if err := RunJob(context.Background(), ckAggPlan(1), cfg); err != nil {
			b.Fatal(err)
		}
		if len(infos) < 2 {
			b.Fatalf("%d checkpoints", len(infos))
		}
		full, incr := infos[0], infos[1]
		// Restore: reset to the latest checkpoint and load every key.
		start := time.Now()
		if _, ok, err := store.RestoreLatest(); err != nil || !ok {
			b.Fatal(ok, err)
		}
		ck.Restore, ck.FirstID, ck.OnComplete = true, ck.LastID+1, nil
		sizes = nil // the restored job reads nothing more: it restores, then ends
		if err := RunJob(context.Background(), ckAggPlan(1), cfg); err != nil {
			b.Fatal(err)
		}
		restore := time.Since(start)
		store.Close()
		b.ReportMetric(float64(full.SyncMS), "full-sync-ms")
		b.ReportMetric(float64(full.AsyncMS), "full-async-ms")
		b.ReportMetric(float64(full.Written), "full-bytes")
		b.ReportMetric(float64(incr.Written), "1%-bytes")
		b.ReportMetric(100*float64(incr.Written)/float64(full.Written), "1%-of-full-%")
		b.ReportMetric(float64(restore.Milliseconds()), "restore-ms")
	}
}
