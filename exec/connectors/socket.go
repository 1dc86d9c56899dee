package connectors

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/format"
)

// SocketSource reads delimited lines from a TCP connection: one row per
// line, either the raw line as the table's single STRING column, or parsed
// with the table's 'format'. It is unbounded and ends when the peer closes
// the connection. A reader goroutine feeds a bounded channel of chunks; Run
// selects on it, ctx and a Linger ticker.
//
// Checkpoints: a socket cannot be rewound, so the source keeps no position.
// After a restore it reconnects and reads whatever the peer sends from then
// on: records received after the restored checkpoint's barrier and before
// the failure are lost. A socket source therefore gives at-most-once
// results after a restore (as in Flink, a raw socket cannot give
// exactly-once); without failures every record is processed once.
type SocketSource struct {
	sc    *exec.SourceContext
	addr  string
	delim byte
	rb    *array.RecordBuilder
	str   *array.StringBuilder // raw mode
	dec   recordDecoder        // format mode
	raw   bool

	mu     sync.Mutex
	conn   net.Conn
	closed bool
	done   chan struct{}
	ch     chan sockChunk
	wg     sync.WaitGroup

	carry     []byte         // a line (or CSV record) not complete yet
	scan      format.CSVScan // what of carry Scan has read
	tmp       []byte         // a raw line repaired to valid UTF-8
	lineNo    int64
	skipped   int64 // bad records skipped (ignore-parse-errors)
	emSkipped int64 // skipped as of the last emit
}

type sockChunk struct {
	data []byte
	err  error // io.EOF when the peer closed
}

func newSocketSource(t *catalog.Table, sc *exec.SourceContext) (*SocketSource, error) {
	host := t.OptionOr("hostname", "")
	port := optInt(t, "port", 0)
	s := &SocketSource{
		sc:    sc,
		addr:  net.JoinHostPort(host, strconv.FormatInt(port, 10)),
		delim: byte(optInt(t, "byte-delimiter", '\n')),
		done:  make(chan struct{}),
		ch:    make(chan sockChunk, 4),
	}
	mem := sc.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	s.rb = array.NewRecordBuilder(mem, sc.Schema.Arrow())
	if _, ok := t.Option("format"); ok {
		var err error
		if s.dec, err = newRecordDecoder(t, sc.Schema, s.rb.Fields()); err != nil {
			s.rb.Release()
			return nil, err
		}
	} else {
		if len(sc.Schema) != 1 || sc.Schema[0].Type.Kind != catalog.KindString {
			s.rb.Release()
			return nil, fmt.Errorf("socket source: without 'format' the table needs exactly one STRING column")
		}
		s.raw = true
		s.str = s.rb.Field(0).(*array.StringBuilder)
	}
	return s, nil
}

// Run connects and emits a batch when BatchSize rows are ready or Linger
// passed; it returns nil when the peer closes the connection.
func (s *SocketSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("socket source: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return errors.New("socket source: closed")
	}
	s.conn = conn
	s.wg.Add(1)
	go s.read(conn)
	s.mu.Unlock()

	linger := s.sc.Linger
	if linger <= 0 {
		linger = 200 * time.Millisecond
	}
	tick := time.NewTicker(linger)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if s.rb.Field(0).Len() > 0 {
				if err := s.emit(emit, s.rb.NewRecord()); err != nil {
					return err
				}
			} else if err := s.emit(emit, nil); err != nil {
				return err
			}
		case c := <-s.ch:
			if err := s.consume(c.data, emit); err != nil {
				return err
			}
			if c.err != nil {
				if len(s.carry) > 0 {
					if err := s.addLine(s.carry); err != nil {
						return err
					}
					s.carry = s.carry[:0]
				}
				if s.rb.Field(0).Len() > 0 {
					if err := s.emit(emit, s.rb.NewRecord()); err != nil {
						return err
					}
				}
				s.emSkipped = s.skipped // everything read was handed on
				if c.err == io.EOF || s.isClosed() {
					return nil
				}
				return fmt.Errorf("socket source: reading from %s: %w", s.addr, c.err)
			}
		}
	}
}

// emit hands rec (nil: a heartbeat) on; everything decoded so far has then
// been emitted.
func (s *SocketSource) emit(emit func(arrow.Record) error, rec arrow.Record) error {
	s.emSkipped = s.skipped
	return emit(rec)
}

// SnapshotState implements exec.CheckpointedSource. The state holds no
// position (a socket cannot seek; see SocketSource): after the header (see
// state.go) only the uvarint count of bad records skipped in what was
// emitted, so that skipped records stay counted once across restores.
func (s *SocketSource) SnapshotState() ([]byte, error) {
	b := stateHeader(kindSocket, s.sc.Subtask, s.sc.Parallelism)
	return binary.AppendUvarint(b, uint64(s.emSkipped)), nil
}

// RestoreState implements exec.CheckpointedSource: it restores the skipped
// count (added to SourceContext.SkippedRecords); the source then reads
// what the peer sends after reconnecting. An empty state is accepted.
func (s *SocketSource) RestoreState(state []byte) error {
	if len(state) == 0 {
		return nil
	}
	r, err := openState(state, kindSocket, s.sc.Subtask, s.sc.Parallelism)
	if err != nil {
		return err
	}
	n := r.int()
	if err := r.end(); err != nil {
		return err
	}
	s.skipped, s.emSkipped = n, n
	s.sc.SkippedRecords.Add(n)
	return nil
}

// RestoreStates implements exec.RescalableSource. A socket has no position
// to hand over: the skipped counts of the given states are summed (each old
// state has one owner, so every bad record stays counted once). The
// planner runs a socket source at parallelism 1 (SourceParallelism), so
// only one subtask ever reads, whatever the parallelism of the states.
func (s *SocketSource) RestoreStates(states [][]byte) error {
	var given [][]byte
	for _, st := range states {
		if len(st) > 0 {
			given = append(given, st)
		}
	}
	rs, err := openStates(given, kindSocket, s.sc.Subtask, s.sc.Parallelism)
	if err != nil {
		return err
	}
	var sum int64
	for _, r := range rs {
		n := r.int()
		if err := r.end(); err != nil {
			return err
		}
		sum += n
	}
	s.skipped, s.emSkipped = sum, sum
	s.sc.SkippedRecords.Add(sum)
	return nil
}

func (s *SocketSource) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// consume splits data into lines (carrying a partial line over).
func (s *SocketSource) consume(data []byte, emit func(arrow.Record) error) error {
	for len(data) > 0 {
		i := bytes.IndexByte(data, s.delim)
		if i < 0 {
			s.carry = append(s.carry, data...)
			return nil
		}
		line := data[:i]
		if len(s.carry) > 0 {
			s.carry = append(s.carry, line...)
			line = s.carry
		}
		data = data[i+1:]
		if !s.raw && !s.dec.complete(line, &s.scan) {
			// a quoted CSV field spans the delimiter
			if len(s.carry) == 0 {
				s.carry = append(s.carry, line...)
			}
			s.carry = append(s.carry, s.delim)
			continue
		}
		if err := s.addLine(line); err != nil {
			return err
		}
		s.carry = s.carry[:0]
		if s.rb.Field(0).Len() >= s.sc.BatchSize {
			if err := s.emit(emit, s.rb.NewRecord()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *SocketSource) addLine(line []byte) error {
	s.lineNo++
	if s.raw {
		if n := len(line); n > 0 && line[n-1] == '\r' && s.delim == '\n' {
			line = line[:n-1]
		}
		if !utf8.Valid(line) {
			s.tmp = format.AppendValidUTF8(s.tmp[:0], line)
			line = s.tmp
		}
		s.str.BinaryBuilder.Append(line)
		return nil
	}
	if _, err := s.dec.decode(line); err != nil {
		if !s.dec.ignore {
			return fmt.Errorf("%s: line %d: %w", s.addr, s.lineNo, err)
		}
		s.skipped++
		s.sc.SkippedRecords.Add(1)
	}
	return nil
}

func (s *SocketSource) read(conn net.Conn) {
	defer s.wg.Done()
	for {
		buf := make([]byte, 64<<10)
		n, err := conn.Read(buf)
		if n > 0 {
			select {
			case s.ch <- sockChunk{data: buf[:n]}:
			case <-s.done:
				return
			}
		}
		if err != nil {
			select {
			case s.ch <- sockChunk{err: err}:
			case <-s.done:
			}
			return
		}
	}
}

// Close closes the connection and waits for the reader goroutine.
func (s *SocketSource) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	if s.conn != nil {
		s.conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.rb.Release()
	return nil
}
