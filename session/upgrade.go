package session

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
)

// This file holds upgrade checks: EXPLAIN UPGRADE FROM SAVEPOINT and
// Session.CheckUpgrade (`streamsql run --check`).

// IgnoreUnclaimedOption lets a restore drop the state of operators that
// the new job no longer has.
const IgnoreUnclaimedOption = "execution.savepoint.ignore-unclaimed-state"

// ignoreUnclaimed reports whether IgnoreUnclaimedOption is 'true'.
func (s *Session) ignoreUnclaimed() bool {
	return s.Options.Bool(IgnoreUnclaimedOption)
}

// explainUpgrade is EXPLAIN UPGRADE FROM SAVEPOINT 'path' <statement>: the
// report, whatever its verdict (the job is not started).
func (s *Session) explainUpgrade(x *parser.ExplainUpgrade) (*Result, error) {
	ph, err := s.planStatement(x.Stmt)
	if err != nil {
		return nil, err
	}
	ops, err := readSavepointOperators(x.Path)
	if err != nil {
		return nil, &parser.Error{Pos: x.PathPos, Msg: err.Error()}
	}
	rep, err := planner.CheckUpgrade(ops, ph, s.ignoreUnclaimed())
	if err != nil {
		return nil, &parser.Error{Pos: x.PathPos, Msg: fmt.Sprintf("savepoint '%s': %v", x.Path, err)}
	}
	return &Result{Kind: ResultText, Message: "Savepoint: " + x.Path + "\n" + rep.String()}, nil
}

// CheckUpgrade plans stmt (an INSERT, a statement set, or an EXPLAIN
// UPGRADE's statement) and checks it against the operators recorded in the
// savepoint at path, honouring 'execution.savepoint.ignore-unclaimed-state'.
// The error is about the statement or the savepoint; whether the job may
// restore is the report's Err().
func (s *Session) CheckUpgrade(path string, stmt parser.Statement) (*planner.UpgradeReport, error) {
	if eu, ok := stmt.(*parser.ExplainUpgrade); ok {
		stmt = eu.Stmt
	}
	ph, err := s.planStatement(stmt)
	if err != nil {
		return nil, err
	}
	ops, err := readSavepointOperators(path)
	if err != nil {
		return nil, err
	}
	rep, err := planner.CheckUpgrade(ops, ph, s.ignoreUnclaimed())
	if err != nil {
		return nil, fmt.Errorf("savepoint '%s': %w", path, err)
	}
	return rep, nil
}

// readSavepointOperators returns meta["operators"] of the savepoint at
// path (its directory or its _metadata file; a path or file:// URI).
func readSavepointOperators(path string) (string, error) {
	p := strings.TrimSpace(path)
	if filepath.Base(p) == "_metadata" {
		p = filepath.Dir(p)
	}
	if local, err := checkpoint.LocalPath(p); err == nil {
		if _, err := os.Stat(local); errors.Is(err, iofs.ErrNotExist) {
			return "", fmt.Errorf("no savepoint at '%s': no such directory", path)
		}
	}
	info, err := checkpoint.ReadSavepointMeta(p)
	if err != nil {
		return "", err // names the savepoint's path
	}
	ops, ok := info.Meta["operators"]
	if !ok {
		return "", fmt.Errorf("savepoint '%s' records no operator list (meta \"operators\"); it cannot be checked for upgrades", path)
	}
	return ops, nil
}
