package main

import (
	_ "github.com/apache/arrow/go/v17/arrow/array"
	_ "github.com/apache/arrow/go/v17/arrow/compute"
	_ "github.com/apache/arrow/go/v17/arrow/ipc"
	_ "github.com/apache/arrow/go/v17/arrow/memory"
	_ "github.com/chzyer/readline"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/cockroachdb/pebble"
	_ "github.com/cockroachdb/pebble/vfs/errorfs"
	_ "github.com/pingcap/tidb/pkg/parser"
	_ "github.com/pingcap/tidb/pkg/parser/ast"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sync/errgroup"
	_ "modernc.org/sqlite"
)

func main() {}
