// Package state is the keyed-state layer of the runtime: every stateful
// operator keeps its keyed state in a Table instead of hand-written
// bookkeeping of its own.
//
// # Tables
//
// A Table maps keys (a single BIGINT-like key, or an encoded byte key) to
// dense slot ids; the operator keeps its values columnar, indexed by slot
// (typed slices, no boxing). The table knows each slot's key group (the
// one the hash exchange routed the row by), whether it is alive, and which
// slots changed since the last checkpoint.
//
// # Epoch-aware change sets
//
// With checkpointing on, Touch marks a slot changed in O(1) and Remove
// records the removed key (a tombstone). At the barrier of checkpoint n,
// Snapshot writes, in key order, every changed key that is alive (Put) and
// every removed key that is not alive again (Delete), and keeps the set as
// pending[n]. The outcome of checkpoint n then decides:
//
//   - Complete(n) drops the pending set (its writes are in the committed
//     state);
//   - Abort(n) merges it back into the current change set, so the next
//     checkpoint writes those keys again: an aborted checkpoint never loses
//     an epoch;
//   - a Snapshot before the outcome of n is known merges pending[n] into
//     its own writes, so the newest pending set always covers every change
//     since the last completed checkpoint, whatever order notifications
//     arrive in.
//
// A failed Snapshot leaves the change set as it was. Without checkpointing
// nothing is tracked (no tombstones, no change lists). Equal state gives
// equal bytes: keys are written sorted and values are encoded by the
// operator deterministically.
//
// # TTL and timers
//
// A Table with Options.TTL expires keys not updated for longer (processing
// time, Flink's table.exec.state.ttl): expired keys are never returned,
// are swept incrementally and deleted from the next checkpoint; update
// times are stored with the values. Timers (event or processing time) are
// kept by key group in the same store, with the same epoch-aware change
// tracking; operators fire them from ProcessWatermark (Timers.Advance).
//
// # Larger than memory
//
// KV keeps its keys in an ordered index (Scan of a prefix is O(log n + k),
// allocation-free) and, with Options.Backend "rocksdb" or "pebble"
// (state.backend.type), is tiered: hot entries in memory within
// Options.MemoryBudget, cold ones in a per-instance Pebble DB in a spill
// directory, one consistent view, CLOCK eviction with write-back. Its
// change set is the ordered set of state keys changed since the last
// snapshot, independent of eviction, so checkpoints stay incremental and
// byte-identical to the in-memory backend's (docs/state.md). A Table is
// tiered the same way when its operator opts in with EnableTier (the group
// aggregation, TopN, deduplication): hot slots in memory, cold keys in
// Pebble, loaded and decoded on a lookup miss, evicted by MaybeEvict
// between batches; change sets survive eviction and restore writes
// straight into Pebble (tabletier.go). Tables of operators that iterate
// every slot or keep slot ids across batches stay in memory.
//
// # Layout
//
// Keys are checkpoint.KeyedPrefix(operator id, key group) followed by the
// operator's encoded key; restoring scans the key groups of a subtask.
//
// This package must not import exec (exec imports it).
package state
