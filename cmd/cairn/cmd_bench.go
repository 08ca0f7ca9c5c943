package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/bench"
	"github.com/cairnstore/cairn/head"
)

func init() {
	register("bench", "measure Workbench calls over an emulated remote bucket", runBench)
}

// runBench runs the bench's scenarios and prints one table:
//
//	cairn bench [--files N[,N…]] [--rtt 20ms] [--write-rate 1] [--scenarios a,b] [--json] [--svg F]
//	cairn bench --from-json F [--json] [--svg F]
//
// Every scenario calls the Workbench tools over an in-memory bucket behind
// the latency wrapper (--rtt before every request, --write-rate writes per
// second to one object) and the counting wrapper, at each workbench size
// of --files. Progress goes to standard error, the table to standard
// output; --svg also draws it as a chart in a file. --from-json runs
// nothing: it reads a table an earlier run printed with --json and prints
// or draws it again. Exit status: 0 when every scenario ran, 1 when one
// failed (the rows measured so far are printed) or the chart could not be
// written, 2 for a usage error.
func runBench(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	files := fs.String("files", "1000,10000", "workbench sizes in files, comma-separated")
	rtt := fs.Duration("rtt", 20*time.Millisecond, "delay before every request")
	writeRate := fs.Float64("write-rate", 1, "writes per second allowed to one object (0: no limit)")
	scenarios := fs.String("scenarios", "", "scenarios to run, comma-separated (default: all)")
	asJSON := fs.Bool("json", false, "print the table as JSON")
	rate := fs.Float64("rate", bench.DefaultRate, "put_file calls per second offered by the throughput scenarios, in total")
	duration := fs.Duration("duration", bench.DefaultDuration, "how long the throughput scenarios offer calls")
	replicas := fs.Int("replicas", bench.DefaultReplicas, "replicas of throughput-8")
	dirEntries := fs.Int("dir-entries", bench.DefaultDirEntries, "entries of the directory listed and grepped")
	putSamples := fs.Int("put-samples", bench.DefaultPutSamples, "puts put-new-warm (of new files) and put-replace-warm (replacing files) each make, one at a time; each row is their mean, folds included")
	seedBatch := fs.Int("seed-batch", bench.DefaultSeedBatch, "commands per group commit while seeding")
	cacheMiB := fs.Int64("cache-mib", 0, fmt.Sprintf("decoded-object cache of every replica, in MiB (0: the engine's default, %d)", head.DefaultCacheBytes>>20))
	valueFormat := fs.Int("value-format", 0, "value format the bench's store is created in: 7, today's (restores copy in each family's key order), 6 (heads that say whether their writer lists other replicas' intents), 5 (objects compressed), 4 (plain; a commit reads what changed since its parent), 3 (it reads the whole workbench into a member tree) or 2 (into rows); 0: today's")
	dir := fs.String("dir", "", "keep each size's store in a local-file bucket in a fresh directory under this one (all removed when the run ends) and count its fsyncs; default: in memory. With --served, where the GCS emulator keeps its objects (default: the temporary directory)")
	served := fs.Bool("served", false, "run the write scenarios through `cairn serve` processes, as a deployment does: the store in a GCS emulator (cairn fake-gcs) in its own process, behind a proxy adding --rtt and --write-rate; rows count the proxy's requests and the servers' CPU")
	var serveArgs stringList
	fs.Var(&serveArgs, "serve-flag", "a flag for every `cairn serve` of --served, as --name=value (repeatable)")
	var emulatorArgs stringList
	fs.Var(&emulatorArgs, "emulator-flag", "a flag for the `cairn fake-gcs` of --served, as --name=value (repeatable)")
	commitSamples := fs.Int("commit-samples", bench.DefaultCommitSamples, "pairs of a replaced file and a commit that put-commit-warm makes; its row is their mean")
	randomBodies := fs.Bool("random-bodies", false, "write bodies of random base64 text, which compresses little, instead of lines of repeated English")
	trace := fs.Bool("trace", false, "print every request of the measured scenarios to stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file; samples taken during a scenario carry the labels scenario and files (go tool pprof -tagfocus scenario=NAME)")
	seedConcurrency := fs.Int("seed-concurrency", bench.DefaultSeedConcurrency, "concurrent put_file calls while seeding")
	extrapolate := fs.String("extrapolate", "", "sizes to extrapolate to from the two largest measured, comma-separated (rows marked *)")
	storageHold := fs.Duration("storage-hold", 0, fmt.Sprintf("after the storage workload, keep its cairn serve running, idle, this long (sampling the store every minute) and measure the store again, as a deployment's background sweeps leave it (0: not at all; at most %v)", bench.MaxStorageHold))
	svgPath := fs.String("svg", "", "also draw the table as an SVG chart in this file, after the run")
	fromJSON := fs.String("from-json", "", "run nothing: read a table printed by an earlier `cairn bench --json` from this file (- for standard input) and print it, or draw it with --svg; only --json and --svg go with it")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn bench [--files N[,N…]] [--rtt 20ms] [--write-rate 1] [--scenarios a,b] [--json] [--svg F]")
		fmt.Fprintln(e.stderr, "       cairn bench --from-json F [--json] [--svg F]")
		fs.PrintDefaults()
		fmt.Fprintln(e.stderr, "\nscenarios:\n  "+strings.Join(bench.Scenarios(), "\n  "))
		fmt.Fprintf(e.stderr, "  %s (only when named: N files of 2 KiB through one cairn serve on a local-file bucket under --dir, %d clients, a commit every %d files; --rtt and --write-rate do not apply)\n",
			bench.Storage, bench.StorageClients, bench.StorageCommitEvery)
	}
	set, code, done := parseFlags(e, fs, args)
	if done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(e.stderr, "cairn bench: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	if *cacheMiB < 0 || *cacheMiB > maxMiB {
		fmt.Fprintf(e.stderr, "cairn bench: --cache-mib %d: from 0 (the engine's default) to %d (1 PiB)\n", *cacheMiB, maxMiB)
		return exitUsage
	}
	if *svgPath != "" {
		// Refused now rather than after a run that may take an hour.
		if st, err := os.Stat(filepath.Dir(*svgPath)); err != nil || !st.IsDir() {
			fmt.Fprintf(e.stderr, "cairn bench: --svg %s: %s is not a directory\n", *svgPath, filepath.Dir(*svgPath))
			return exitUsage
		}
	}
	if *fromJSON != "" {
		// Only the output flags go with a saved table; the others shape a
		// run, and one given on the command line is refused (from the
		// environment or a config file it is left alone).
		var other string
		fs.VisitAll(func(f *flag.Flag) {
			switch f.Name {
			case "from-json", "json", "svg":
			default:
				if other == "" && set.from(f.Name) == fromFlag {
					other = f.Name
				}
			}
		})
		if other != "" {
			fmt.Fprintf(e.stderr, "cairn bench: --%s does not go with --from-json, which runs nothing\n", other)
			return exitUsage
		}
		t, err := readBenchTable(e, *fromJSON)
		if err != nil {
			fmt.Fprintf(e.stderr, "cairn bench: --from-json: %v\n", err)
			return exitUsage
		}
		if err := writeBenchTable(e, t, *asJSON, *svgPath); err != nil {
			fmt.Fprintf(e.stderr, "cairn bench: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	sizes, err := parseSizes(*files)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn bench: --files: %v\n", err)
		return exitUsage
	}
	var extra []int
	if *extrapolate != "" {
		if extra, err = parseSizes(*extrapolate); err != nil {
			fmt.Fprintf(e.stderr, "cairn bench: --extrapolate: %v\n", err)
			return exitUsage
		}
	}
	cfg := bench.Config{
		Files:           sizes,
		RTT:             *rtt,
		WriteRate:       *writeRate,
		Rate:            *rate,
		Duration:        *duration,
		Replicas:        *replicas,
		DirEntries:      *dirEntries,
		SeedBatch:       *seedBatch,
		PutSamples:      *putSamples,
		CacheBytes:      *cacheMiB << 20,
		ValueFormat:     *valueFormat,
		CommitSamples:   *commitSamples,
		RandomBodies:    *randomBodies,
		Dir:             *dir,
		Trace:           e.traceTo(*trace),
		SeedConcurrency: *seedConcurrency,
		Progress:        e.stderr,
		Served:          *served,
		ServeArgs:       serveArgs,
		EmulatorArgs:    emulatorArgs,
		StorageHold:     *storageHold,
	}
	if *scenarios != "" {
		cfg.Scenarios = strings.Split(*scenarios, ",")
	}
	if *served || slices.Contains(cfg.Scenarios, bench.Storage) {
		if cfg.Binary, err = os.Executable(); err != nil {
			fmt.Fprintf(e.stderr, "cairn bench: %v\n", err)
			return exitFailed
		}
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(e.stderr, "cairn bench: %v\n", err)
		return exitUsage
	}
	if len(extra) > 0 && len(sizes) < 2 {
		fmt.Fprintln(e.stderr, "cairn bench: --extrapolate needs two measured sizes in --files")
		return exitUsage
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(e.stderr, "cairn bench: --cpuprofile: %v\n", err)
			return exitUsage
		}
		defer stop()
	}
	t, runErr := bench.Run(ctx, cfg)
	if t == nil {
		fmt.Fprintf(e.stderr, "cairn bench: %v\n", runErr)
		return exitFailed
	}
	if runErr == nil && len(extra) > 0 {
		t.Extrapolate(extra)
	}
	err = writeBenchTable(e, t, *asJSON, *svgPath)
	if err != nil || runErr != nil {
		fmt.Fprintf(e.stderr, "cairn bench: %v\n", cmpNil(runErr, err))
		return exitFailed
	}
	return exitOK
}

// writeBenchTable prints t to standard output, as JSON or as text, and
// with svgPath draws it there as a chart too.
func writeBenchTable(e *env, t *bench.Table, asJSON bool, svgPath string) error {
	var err error
	if asJSON {
		err = t.WriteJSON(e.stdout)
	} else {
		err = t.WriteText(e.stdout)
	}
	if err != nil || svgPath == "" {
		return err
	}
	var chart bytes.Buffer
	if err := t.WriteSVG(&chart); err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	if err := os.WriteFile(svgPath, chart.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	return nil
}

// readBenchTable reads a table printed by `cairn bench --json` from the
// file path, or from standard input for "-".
func readBenchTable(e *env, path string) (*bench.Table, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(e.stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	t := &bench.Table{}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("%s: not a table of cairn bench --json: %v", path, err)
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows: not a table of cairn bench --json", path)
	}
	return t, nil
}

// parseSizes parses "1000,10000" (underscores allowed: 100_000).
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(f), "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number of files", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// cmpNil returns the first non-nil error.
func cmpNil(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// traceTo is where --trace sends the request trace: stderr, or nowhere.
func (e *env) traceTo(on bool) io.Writer {
	if !on {
		return nil
	}
	return e.stderr
}

// allocProfile creates path and returns the call that writes the
// process's allocations so far into it (pprof's allocs profile).
func allocProfile(path string) (write func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return func() {
		pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}, nil
}

// startCPUProfile profiles the process's CPU into path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
