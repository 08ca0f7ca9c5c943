package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release version, set at link time
// (-ldflags "-X main.version=v1.2.3"); empty for a build from source,
// whose module version and commit come from the build info instead.
var version string

// buildVersion describes the binary: its version (the release's, else
// the module's, else "(devel)"), the commit it was built from (with
// "+dirty" when the tree had changes) and the Go version.
func buildVersion() (ver, commit, goVersion string) {
	ver, commit, goVersion = version, "unknown", runtime.Version()
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if ver == "" {
			ver = "(devel)"
		}
		return ver, commit, goVersion
	}
	if ver == "" {
		ver = info.Main.Version
	}
	if ver == "" {
		ver = "(devel)"
	}
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		commit += "+dirty"
	}
	return ver, commit, goVersion
}

// shortVersion is the version with the commit's first 12 digits when it
// is known ("(devel)+0123456789ab"), as a server reports itself.
func shortVersion() string {
	ver, commit, _ := buildVersion()
	if commit == "unknown" {
		return ver
	}
	return ver + "+" + commit[:min(12, len(commit))]
}

// runVersion prints the version line: cairn VERSION (commit COMMIT, GO).
func runVersion(_ context.Context, e *env, args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(e.stdout, "usage: cairn version")
		return exitOK
	}
	if len(args) != 0 {
		fmt.Fprintf(e.stderr, "cairn version: unexpected argument %q\n", args[0])
		return exitUsage
	}
	ver, commit, goVersion := buildVersion()
	fmt.Fprintf(e.stdout, "cairn %s (commit %s, %s)\n", ver, commit, goVersion)
	return exitOK
}

func init() { register("version", "print the version and the commit built from", runVersion) }
