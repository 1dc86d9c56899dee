package session

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
)

const upgradeDDL = `
CREATE TABLE words (word STRING, n INT) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/words.csv', 'format' = 'csv');
CREATE TABLE counts (word STRING, c BIGINT) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/out', 'format' = 'json');
CREATE TABLE ncounts (n INT, c BIGINT) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/out2', 'format' = 'json');
CREATE TABLE shown (word STRING) WITH ('connector' = 'print');
`

// writeMetadata writes dir/_metadata in checkpoint's savepoint envelope
// (checksummed body) with the given meta.
func writeMetadata(t *testing.T, dir string, meta map[string]string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"savepoint_format_version": 1, "kind": "SAVEPOINT", "job_id": "abcdef",
		"checkpoint_id": 3, "meta": meta, "state": []any{}, "files": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	sum := fmt.Sprintf("%08x", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	doc := `{"format_version": 1, "type": "savepoint", "checksum_algorithm": "crc32c", "body_checksum": "` + sum + `", "body": ` + string(body) + "}\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_metadata"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSavepoint writes a savepoint's _metadata recording operators.
func writeSavepoint(t *testing.T, dir, operators string) {
	writeMetadata(t, dir, map[string]string{"operators": operators, "job_name": "test"})
}

func parseOne(t *testing.T, sql string) parser.Statement {
	t.Helper()
	st, err := parser.Parse(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return st
}

func TestExplainUpgrade(t *testing.T) {
	s, _, _ := newTestSession(t)
	defer s.Close()
	execAll(t, s, upgradeDDL)
	ph, err := s.planStatement(parseOne(t, "INSERT INTO counts SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word"))
	if err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(t.TempDir(), "savepoint-abcdef-01")
	writeSavepoint(t, sp, planner.OperatorsMeta(ph))

	tests := []struct {
		sql     string
		ignore  bool
		verdict string
		lines   []string
	}{
		{"INSERT INTO counts SELECT /*+ UID('wc') */ word, COUNT(*) FROM words WHERE n > 0 GROUP BY word", false,
			"COMPATIBLE: 3 restored, 0 new", []string{"RESTORED      GlobalGroupAggregate(groupBy=[word], select=[COUNT(*) AS EXPR$0]) on words [id=wc]"}},
		{"INSERT INTO ncounts SELECT /*+ UID('wc') */ n, COUNT(*) FROM words GROUP BY n", false,
			"REFUSED: 1 operator has incompatible state", []string{"INCOMPATIBLE  GlobalGroupAggregate(groupBy=[n], select=[COUNT(*) AS EXPR$0]) on words [id=wc]: grouping key 1 (n) was STRING, now INT"}},
		{"INSERT INTO shown SELECT word FROM words", false,
			"REFUSED: the state of 1 operator is unclaimed; SET 'execution.savepoint.ignore-unclaimed-state' = 'true' to drop it",
			[]string{"UNCLAIMED     GlobalGroupAggregate(groupBy=[word], select=[COUNT(*) AS EXPR$0]) on words [id=wc]: no operator claims this state"}},
		{"INSERT INTO shown SELECT word FROM words", true, "COMPATIBLE: 1 restored, 0 new, 2 unclaimed (dropped)", nil},
	}
	for _, tc := range tests {
		if tc.ignore {
			execAll(t, s, "SET '"+IgnoreUnclaimedOption+"' = 'true'")
		} else {
			s.Options.Reset(IgnoreUnclaimedOption)
		}
		res, err := s.Execute(context.Background(), parseOne(t, "EXPLAIN UPGRADE FROM SAVEPOINT '"+sp+"' "+tc.sql))
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if res.Kind != ResultText || !strings.HasPrefix(res.Message, "Savepoint: "+sp+"\n== Upgrade Check ==\n") ||
			!strings.HasSuffix(res.Message, "== Result ==\n"+tc.verdict+"\n") {
			t.Errorf("%s:\n%s", tc.sql, res.Message)
		}
		for _, l := range tc.lines {
			if !strings.Contains(res.Message, "\n"+l+"\n") {
				t.Errorf("%s: no line %q in\n%s", tc.sql, l, res.Message)
			}
		}
		// CheckUpgrade (streamsql run --check) gives the same report.
		rep, err := s.CheckUpgrade(sp, parseOne(t, tc.sql))
		if err != nil {
			t.Fatal(err)
		}
		if "Savepoint: "+sp+"\n"+rep.String() != res.Message {
			t.Errorf("CheckUpgrade differs:\n%s", rep)
		}
		if (rep.Err() == nil) != strings.HasPrefix(tc.verdict, "COMPATIBLE") {
			t.Errorf("%s: Err() = %v", tc.sql, rep.Err())
		}
	}
	// The _metadata file itself may be named; a file:// URI works.
	if _, err := s.CheckUpgrade("file://"+filepath.Join(sp, "_metadata"), parseOne(t, "INSERT INTO shown SELECT word FROM words")); err != nil {
		t.Error(err)
	}
}

func TestExplainUpgradeErrors(t *testing.T) {
	s, _, _ := newTestSession(t)
	defer s.Close()
	execAll(t, s, upgradeDDL)
	dir := t.TempDir()
	noOps := filepath.Join(dir, "old")
	writeMetadata(t, noOps, map[string]string{"job_name": "old"})
	bad := filepath.Join(dir, "bad")
	writeSavepoint(t, bad, "{not json")
	incomplete := filepath.Join(dir, "savepoint-abcdef-02")
	if err := os.MkdirAll(incomplete, 0o755); err != nil {
		t.Fatal(err)
	}
	q := " INSERT INTO shown SELECT word FROM words"
	tests := []struct{ sql, want string }{
		{"EXPLAIN UPGRADE FROM SAVEPOINT '" + filepath.Join(dir, "missing") + "'" + q, "1:32: no savepoint at '"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT '" + incomplete + "'" + q, "incomplete savepoint"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT '" + noOps + "'" + q, "records no operator list"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT '" + bad + "'" + q, "operator list (meta \"operators\") is not valid"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT '" + bad + "' INSERT INTO nope SELECT word FROM words", "sink table 'nope' not found"},
	}
	for _, tc := range tests {
		_, err := s.Execute(context.Background(), parseOne(t, tc.sql))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}
