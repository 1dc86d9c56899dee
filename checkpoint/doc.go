// Package checkpoint owns the durable state of streaming jobs: the Pebble
// state store every operator writes to at a barrier, the key encoding
// ([operator id][key group][key]), Flink's on-disk checkpoint layout,
// restore, retention and listing.
//
// Layout (exactly Flink's):
//
//	<dir>/<job-id>/chk-<n>/_metadata   complete checkpoints only
//	<dir>/<job-id>/chk-<n>/...         small per-checkpoint Pebble files (MANIFEST, OPTIONS, markers)
//	<dir>/<job-id>/shared/             immutable sstables, referenced by one or more checkpoints
//	<dir>/<job-id>/taskowned/          the working Pebble DB and scratch space; never restored from
//
// Savepoints (savepoint.go) are not Pebble files but a canonical,
// self-contained format, independent of parallelism, so that a savepoint can
// be moved and restored anywhere:
//
//	<savepoints dir>/savepoint-<first 6 hex of job id>-<12 random hex>/
//	    op-<hex of operator id>/kg-<key group>.state   keyed state, one file per key group
//	    op-<hex of operator id>/subtask-<i>.state      per-subtask state (SubtaskKey)
//	    _metadata                                      written LAST; paths in it are relative
//
// A state file is a magic ("SSQLSAVE"), a format version, its scope,
// operator id and index, length-prefixed (key, value) records in key order
// and a footer with the record count. Restore verifies every file (size,
// CRC-32C) and batch-loads a fresh working DB. The engine never deletes a
// savepoint (Discard and pruning only touch the job directory, and a
// savepoint may not be written inside it).
//
// Invariants:
//   - A checkpoint is a transaction: Commit writes all writes of checkpoint n
//     and n itself as one sstable (the buffers' sorted runs merged, the last
//     write of a key winning) and ingests it into a working DB without a
//     WAL, never synced: it is never reopened. The ingest is atomic: a commit
//     that fails leaves the previous n in the working DB, and the operators
//     write the failed checkpoint's keys again in the next one; restores
//     rebuild the working DB from a persisted checkpoint. Persist syncs every
//     new table file, makes a durable copy and
//     writes chk-<n>/_metadata LAST (temp file, fsync, rename, fsync of the
//     directory). A chk directory without a valid _metadata is garbage: it is
//     never restored and is removed by the next Persist.
//   - _metadata lists every file the checkpoint needs with its size and
//     CRC-32C; the body of _metadata carries its own CRC-32C. Restore verifies
//     every listed file before anything is opened.
//   - Files in shared/ are immutable. Their names carry a per-working-DB
//     generation so a name never denotes two different contents; a file
//     already in shared/ is referenced, never copied again. A shared file is
//     deleted only when no retained checkpoint references it.
//   - A restore of a job directory never falls back silently: when its
//     newest complete checkpoint fails verification, sinks may already have
//     committed it, so the restore fails (*UnverifiedError) unless
//     Options.AllowFallback. A chk directory without _metadata never
//     completed and is not a candidate.
//   - Checkpoint ids are never reused within a job directory: MaxID is the
//     highest id it has used (complete or not, or restored from).
//   - A job that ends keeping its checkpoints (RETAIN_ON_CANCELLATION,
//     FAILED) keeps Flink's layout: DiscardWorking empties taskowned/ and
//     leaves it in place.
//   - Every file operation goes through Options.FS (Pebble included), so
//     tests can inject faults and crash images.
//
// It must not import exec, planner or session: the runtime depends on the
// small interfaces in api.go, never the reverse. It knows nothing about
// operators beyond opaque operator ids, key groups and bytes.
package checkpoint
