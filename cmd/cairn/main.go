// Command cairn is cairn's one binary: the tools, the operator CLI and the
// developer harness.
//
//	cairn bench                  measure Workbench calls over an emulated remote bucket
//	cairn changes                print the change feed as JSON lines
//	cairn conformance URL        check a bucket before trusting it
//	cairn fake-gcs --addr A      run a local fake GCS for development
//	cairn fsck                   check a deployment root's objects and records
//	cairn gc [--agent ID]        delete what no root, hold, pin or recent head reaches
//	cairn import DIR --workbench ID  import a directory tree into a workbench
//	cairn pin VERB [NAME]        create, verify, copy, restore or delete backup pins
//	cairn recover                give a deployment root whose head is lost a verified root
//	cairn serve                  serve the Workbench tools over HTTP
//	cairn version                print the version and the commit built from
//	cairn workbench TOOL         run one Workbench tool on a JSON input
//
// Every flag can also be set by a CAIRN_* environment variable or a key of
// a config file (settings.go).
//
// Each subcommand lives in its own cmd_<verb>.go file.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	// Adapters register their URL schemes.
	_ "github.com/cairnstore/cairn/bucket/file"
	_ "github.com/cairnstore/cairn/bucket/gcs"
	_ "github.com/cairnstore/cairn/bucket/mem"
	_ "github.com/cairnstore/cairn/bucket/s3"
)

// command is one subcommand: run gets the arguments after the verb and
// returns the process's exit code.
type command struct {
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

// env is what a subcommand may touch of the process, so tests can run
// commands in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

var commands = map[string]command{}

func register(verb, summary string, run func(context.Context, *env, []string) int) {
	if _, dup := commands[verb]; dup {
		panic("cairn: command registered twice: " + verb)
	}
	commands[verb] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version":
		return runVersion(ctx, e, nil)
	case "help":
		// "cairn help CMD" is "cairn CMD --help".
		if len(args) == 1 {
			usage(e.stdout)
			return exitOK
		}
		if _, ok := commands[args[1]]; ok {
			return run(ctx, e, append(args[1:2:2], append(args[2:], "--help")...))
		}
		fmt.Fprintf(e.stderr, "cairn help: unknown command %q\n\n", args[1])
		usage(e.stderr)
		return exitUsage
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "cairn: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return exitUsage
	}
	return c.run(ctx, e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cairn COMMAND [ARGS]   (cairn help COMMAND, cairn --version)\n\ncommands:")
	verbs := make([]string, 0, len(commands))
	for v := range commands {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-14s %s\n", v, commands[v].summary)
	}
}
