package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at release time:
//
//	go build -ldflags "-X main.version=v0.1.0" ./cmd/streamsql
var version = ""

// versionString is "streamsql <version> (<go version>, <os>/<arch>)". Without
// a release version it uses the module version or the VCS revision stamped
// into the binary by the go tool.
func versionString() string {
	v := version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
				v = mv
			} else {
				rev, dirty := "", false
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision":
						rev = s.Value
					case "vcs.modified":
						dirty = s.Value == "true"
					}
				}
				if len(rev) > 12 {
					rev = rev[:12]
				}
				if rev != "" {
					v = "devel-" + rev
					if dirty {
						v += "-dirty"
					}
				}
			}
		}
	}
	return fmt.Sprintf("streamsql %s (%s, %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of streamsql",
		Args:    cobra.NoArgs,
		Example: "  streamsql version\n  streamsql --version",
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(e.stdout, versionString())
			return err
		},
	}
}
