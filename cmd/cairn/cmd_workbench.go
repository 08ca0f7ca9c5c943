package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("workbench", "run one Workbench tool on a JSON input", runWorkbench)
}

// runWorkbench runs one Workbench tool:
//
//	cairn workbench [--bucket URL] [--agent ID] [--input FILE] TOOL
//
// TOOL is a tool of the registry, workbench.Tools (workbench_put_file,
// workbench_list, ...); the usage lists them with their descriptions.
// The tool's JSON arguments come from --input FILE, or from standard input
// ("-" names standard input too); an input of only whitespace is {}. The
// result, success or error, is printed on standard output as one line of
// JSON with sorted keys, exactly as the tool returns it. Flags may come
// before or after TOOL.
//
// On SIGINT or SIGTERM the tool's context is cancelled, and the result is
// printed once the tool has returned: a write whose head write was
// already sent is settled first (for at most a few seconds), so the
// envelope says whether it was applied (success), was not (Cancelled or
// Timeout, retryable) or cannot be told (UnknownOutcome); never Cancelled
// for a write that landed.
//
// With --server URL (or CAIRN_SERVER) the call is posted to a running
// `cairn serve` instead: the same input, the same output, the same exit
// codes, exit 3 when the server cannot be reached or refuses the token
// (--token, or CAIRN_TOKEN) or the agent (see cmd_workbench_remote.go).
// A signal after the call was sent waits (at most 15 s) for the server's
// answer; a call sent whose answer is lost prints UnknownOutcome.
//
// Exit status (see exit.go): 0 for a success result, 1 for an error result
// (still printed; an unknown TOOL is the UnknownTool error result), 2 for
// a usage error, 3 for a bucket that does not exist, cannot be reached or
// refuses the credentials.
//
// An input longer than workbench.MaxInputBytes for TOOL (6 × the 16 MiB
// body limit + 64 KiB; 12 × for workbench_edit) is refused with the
// PayloadTooLarge result, exit 1, after reading one byte more than the
// limit: the rest is never read, the input never parsed.
//
// --bucket defaults to the embedded local-file bucket in ./cairn-data,
// created if missing; any other bucket must exist. --agent (default
// "default") picks the agent whose deployment root /agents/{agent}/wb the
// tool serves; an empty id is a usage error, never the default.
func runWorkbench(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("workbench", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	bucketURL := fs.String("bucket", "", "bucket URL (default: file://$PWD/"+defaultDataDir+", created if missing)")
	agent := fs.String("agent", workbench.DefaultAgentID, "agent id: the tools serve /agents/ID/wb")
	input := fs.String("input", "", "file holding the tool's JSON input (default: standard input)")
	server := fs.String("server", "", "URL of a running `cairn serve` to post the call to instead of opening a bucket (env CAIRN_SERVER)")
	token := fs.String("token", "", "bearer token for --server (env CAIRN_TOKEN)")
	idemKey := fs.String("idempotency-key", "", "with --server: the call's Idempotency-Key, so that a retry with the same key replays its result")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn workbench [--bucket URL | --server URL [--token T] [--idempotency-key K]] [--agent ID] [--input FILE] TOOL < input.json")
		fs.PrintDefaults()
		fmt.Fprintln(e.stderr, "\ntools:")
		tw := tabwriter.NewWriter(e.stderr, 0, 0, 2, ' ', 0)
		for _, t := range workbench.Tools() {
			info, _ := workbench.Tool(t)
			fmt.Fprintf(tw, "  %s\t%s\n", t, info.Description)
		}
		tw.Flush()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	tool := fs.Arg(0)
	// Flags may also follow the tool name.
	if code, done := parseArgs(fs, fs.Args()[1:]); done {
		return code
	}
	set, code, done := applySettings(e, fs)
	if done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "cairn workbench: "+format+"\n", a...)
		fs.Usage()
		return exitUsage
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if err := nonEmptyFlags(fs, "agent", "bucket", "input", "server", "token", "idempotency-key"); err != nil {
		return usageErr("%v", err)
	}
	// A bucket and a server exclude each other when given alike; one on
	// the command line wins over the other from the environment or the
	// config file (CAIRN_SERVER stands for --server unless --bucket names
	// a bucket).
	if *server != "" && *bucketURL != "" {
		switch b, sv := set.from("bucket"), set.from("server"); {
		case b > sv:
			*server = ""
		case sv > b:
			*bucketURL = ""
		case b == fromFlag:
			return usageErr("--bucket and --server exclude each other")
		default:
			return usageErr("a bucket and a server exclude each other (set by %s and %s, or the config file)", envName("bucket"), envName("server"))
		}
	}
	if *server == "" && (set.from("token") == fromFlag || set.from("idempotency-key") == fromFlag) {
		return usageErr("--token and --idempotency-key need --server")
	}
	if *server != "" {
		if err := checkServerURL(*server); err != nil {
			return usageErr("--server: %v", err)
		}
		// As the local mode refuses it when it opens the root.
		if _, werr := workbench.AgentRoot(*agent); werr != nil {
			fmt.Fprintf(e.stderr, "cairn workbench: --agent: %s\n", werr.Message)
			return exitUsage
		}
	}
	if _, known := workbench.Tool(tool); !known {
		// A tool name is the request, not the command line: an unknown one
		// is the UnknownTool error result, as the reference's CLI answers.
		out, _ := workbench.MarshalResult(workbench.UnknownTool(tool).Envelope())
		fmt.Fprintf(e.stdout, "%s\n", out)
		return exitFailed
	}

	raw, code := readToolInput(e, tool, *input)
	if code != exitOK {
		return code
	}
	if *server != "" {
		return callServer(ctx, e, remoteCall{server: *server, token: *token, key: *idemKey, agent: *agent, tool: tool, input: raw})
	}
	return callLocal(ctx, e, *bucketURL, *agent, tool, raw)
}

// readToolInput reads the tool's JSON input from the file named by path
// (standard input for "" or "-"), refusing it unparsed when it is over
// the tool's bound (printed as the InputTooLarge result); empty input is
// {}. A code other than exitOK ends the command.
func readToolInput(e *env, tool, path string) ([]byte, int) {
	limit := workbench.MaxInputBytes(tool, workbench.DefaultMaxBytes)
	var raw []byte
	var size int64 // the input's size when it is a regular file, else -1
	var err error
	if path == "" || path == "-" {
		raw, size, err = readInput(e.stdin, limit)
	} else {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			raw, size, err = readInput(f, limit)
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn workbench: read input: %v\n", err)
		return nil, exitUsage
	}
	if size > limit || int64(len(raw)) > limit {
		// Refused before it is parsed, and before the rest of it is read.
		werr := workbench.InputTooLarge(uint64(len(raw)), uint64(limit), true)
		if size >= 0 {
			werr = workbench.InputTooLarge(uint64(size), uint64(limit), false)
		}
		out, _ := workbench.MarshalResult(werr.Envelope())
		fmt.Fprintf(e.stdout, "%s\n", out)
		return nil, exitFailed
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	return raw, exitOK
}

// callLocal runs the tool on raw against the bucket at bucketURL and
// prints its result.
func callLocal(ctx context.Context, e *env, bucketURL, agent, tool string, raw []byte) int {
	b, url, code, err := openBucket(ctx, bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn workbench: %v\n", err)
		return code
	}
	defer b.Close()
	s, err := workbench.Open(ctx, b, workbench.Options{AgentID: agent})
	if err != nil {
		var werr *workbench.Error
		if errors.As(err, &werr) && werr.Code == workbench.CodeInvalidArguments {
			fmt.Fprintf(e.stderr, "cairn workbench: --agent: %s\n", werr.Message)
			return exitUsage
		}
		fmt.Fprintf(e.stderr, "cairn workbench: open %s: %v\n", url, err)
		out, _ := workbench.MarshalResult(workbench.FromError(err).Envelope())
		fmt.Fprintf(e.stdout, "%s\n", out)
		return exitFailed
	}
	defer s.Close()
	out, ok := s.Call(ctx, tool, raw)
	fmt.Fprintf(e.stdout, "%s\n", out)
	if !ok {
		return exitFailed
	}
	return exitOK
}

// readInput reads a tool's input from r, at most limit+1 bytes: an input
// longer than limit (workbench.MaxInputBytes) is refused whole, so the
// rest is never read. size is the input's length when r is a regular
// file, whose length is known without reading it (nothing is read when it
// is over limit), and -1 otherwise.
func readInput(r io.Reader, limit int64) (raw []byte, size int64, err error) {
	size = -1
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if size = fi.Size(); size > limit {
				return nil, size, nil
			}
		}
	}
	raw, err = io.ReadAll(io.LimitReader(r, limit+1))
	return raw, size, err
}
