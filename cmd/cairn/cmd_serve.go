package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/mcpserve"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("serve", "serve the Workbench tools over HTTP", runServe)
}

// Defaults of cairn serve.
const (
	defaultServeAddr       = "127.0.0.1:7070"
	defaultShutdownTimeout = 30 * time.Second
	// defaultGCInterval is how often serve sweeps its bucket: the default
	// grace, so that garbage waits at most about two graces.
	defaultGCInterval = time.Hour
)

func init() { mcpserve.ServerVersion = shortVersion() }

// mcpMount builds the MCP handler of one agent, mounted at
// /v1/agents/{agent_id}/mcp behind the server's authentication.
func mcpMount(call serve.CallFunc) http.Handler {
	return mcpserve.Handler(mcpserve.CallFunc(call))
}

// runServe serves the Workbench tools of many agent roots over HTTP:
//
//	cairn serve [--bucket URL] [--addr HOST:PORT] [--config FILE]
//	            [--request-timeout D] [--idle-timeout D] [--shutdown-timeout D]
//
// Each setting is taken from its flag, else its environment variable
// (CAIRN_BUCKET, CAIRN_ADDR, CAIRN_CACHE_MIB, ...: settings.go), else the
// config file, else the default: the embedded local-file bucket
// ./cairn-data (created if missing) on 127.0.0.1:7070, or on :$PORT when
// PORT is set (as container platforms set it). Bearer tokens come from the config file's
// agents and from CAIRN_TOKENS ("agent1=tok1,agent2=tok2"; it overrides
// the file's token of an agent it names). With tokens only their agents
// are served; without, any agent id is, and the address must be loopback.
//
// SIGINT or SIGTERM stops accepting connections, lets the requests in
// flight finish (their commits included) for up to --shutdown-timeout,
// then closes the agents' engines. A request still running when the
// grace ends has its connection closed and its context cancelled; the
// engines are closed only once such requests have settled their commits
// (at most 15 s more), and each engine's Close waits for its batch in
// progress and a running fold.
//
// Exit status: 0 after a clean shutdown, 1 when serving failed, 2 for a
// usage error (a bad flag or config, tokens missing for a non-loopback
// address), 3 for a bucket that cannot be used.
func runServe(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	bucketURL := fs.String("bucket", "", "bucket URL (env CAIRN_BUCKET; default: file://$PWD/"+defaultDataDir+", created if missing)")
	addr := fs.String("addr", "", "address to listen on (env CAIRN_ADDR; default "+defaultServeAddr+")")
	configPath := fs.String("config", "", "YAML or JSON config file: agents and tokens, timeouts (env CAIRN_CONFIG)")
	requestTimeout := fs.Duration("request-timeout", 0, "deadline of each request (default 60s)")
	idleTimeout := fs.Duration("idle-timeout", 0, "close an agent's engine after this long without a request (default 5m)")
	shutdownTimeout := fs.Duration("shutdown-timeout", 0, "time given to requests in flight on shutdown (default 30s)")
	cacheMiB := fs.Int("cache-mib", defaultServeCacheMiB, "decoded-object cache of the engines, shared by every agent served, in MiB")
	gcInterval := fs.Duration("gc-interval", defaultGCInterval, "sweep the bucket's garbage this often, on the one replica that holds the bucket's sweep lease (0: never; at least 1s)")
	commitInterval := fs.Duration("commit-interval", 0, "least time between two head writes of one agent's group commits: the store's write rate for one object (GCS: 1s; default 0, unpaced; at most 1m, and less than the request timeout)")
	writeTimeout := fs.Duration("write-timeout", serve.DefaultWriteTimeout, "time past a request's deadline its answer may take to be written; a client that does not read is cut off then")
	bodyBudgetMiB := fs.Int("body-budget-mib", serve.DefaultBodyBudget>>20, "request bodies held in memory at once, across all requests, in MiB; past it a request waits 2s, then gets 503 ServerBusy")
	bodyRateMiB := fs.Int("body-rate-mib", int(serve.DefaultBodyRate()>>20), "how fast request bodies over 256 KiB are read, across all requests, in MiB a second, so that large uploads leave CPU for small calls; the default is 32 for each core (GOMAXPROCS) (0: unpaced)")
	answerBudgetMiB := fs.Int("answer-budget-mib", serve.DefaultAnswerBudget>>20, "large answers (64 KiB or more) being written at once, in MiB; past it a read waits 2s, then gets 503 ServerBusy")
	readBudgetMiB := fs.Int("read-budget-mib", workbench.DefaultReadBudget>>20, "memory whole-body reads hold at once, across all agents, in MiB (a read holds about 3× its body); past it reads wait")
	memLimitMiB := fs.Int("memory-limit-mib", defaultMemoryLimitMiB, "soft limit of the Go heap, in MiB: the collector works harder near it (GOMEMLIMIT, when set, wins; 0: none)")
	gcPercent := fs.Int("gc-percent", defaultGCPercent, "how far the Go heap may grow past what the last collection kept, in percent, 1 to 10000 (GOGC, when set, wins)")
	maxConns := fs.Int("max-conns", defaultMaxConns, "connections held open at once; at the bound the longest-idle one is closed for a new one")
	connIdle := fs.Duration("conn-idle-timeout", defaultConnIdle, "close a kept-alive connection after this long without a request")
	authFailBurst := fs.Int("auth-fail-burst", serve.DefaultAuthFailBurst, "failed authentications a client address may make at once before 429 (one more a second; negative: no limit)")
	memberTrees := fs.Bool("member-trees", false, "commits keep their members in member trees in stores an older cairn created too (a store this cairn creates uses them anyway); turn it on once no older replica shares the bucket")
	valueFormat := fs.Int("value-format", 0, "value format of the stores this cairn creates: 7 (today's), or 6, 5, 4, 3 or 2 (earlier ones, which replicas of an older cairn still read); 0: today's")
	consoleOn := fs.Bool("console", true, "serve the web console at /ui/: agents, workbenches, files, commits, snapshots, pins and a live tail, read-only, behind the same tokens as the API")
	consoleWrites := fs.Bool("console-writes", false, "let the console retire snapshots and pin the head (off: it changes nothing)")
	logLevel := fs.String("log-level", "info", "log level: debug (probes too), info, warn or error")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file, complete once the server stops")
	memProfile := fs.String("memprofile", "", "write a profile of the whole run's allocations to this file once the server stops")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn serve [--bucket URL] [--addr HOST:PORT] [--config FILE] [--request-timeout D] [--idle-timeout D] [--shutdown-timeout D]")
		fs.PrintDefaults()
		fmt.Fprintln(e.stderr, "\nenvironment: CAIRN_BUCKET, CAIRN_ADDR, CAIRN_CONFIG, CAIRN_TOKENS=agent1=token1,agent2=token2")
	}
	if _, code, done := parseFlags(e, fs, args); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "cairn serve: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if err := nonEmptyFlags(fs, "bucket", "addr", "config"); err != nil {
		return usageErr("%v", err)
	}
	if *memLimitMiB < 0 || *gcPercent < 1 || *gcPercent > 10000 {
		return usageErr("--memory-limit-mib must not be negative, and --gc-percent must be 1 to 10000")
	}
	log, err := newLogger(e.stderr, *logLevel, *logFormat)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := cmp.Or(
		checkMiB(1, map[string]int{"body-budget-mib": *bodyBudgetMiB, "answer-budget-mib": *answerBudgetMiB, "read-budget-mib": *readBudgetMiB}),
		checkMiB(0, map[string]int{"cache-mib": *cacheMiB, "body-rate-mib": *bodyRateMiB, "memory-limit-mib": *memLimitMiB}),
		checkValueFormat(*valueFormat),
	); err != nil {
		return usageErr("%v", err)
	}
	if *maxConns < 1 {
		return usageErr("--max-conns must be at least 1")
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return usageErr("--cpuprofile: %v", err)
		}
		defer stop()
	}
	if *memProfile != "" {
		write, err := allocProfile(*memProfile)
		if err != nil {
			return usageErr("--memprofile: %v", err)
		}
		defer write()
	}
	tuneHeap(*memLimitMiB, *gcPercent)
	warnBudgets(log, *memLimitMiB, *cacheMiB+bodies.DefaultCacheBytes>>20+workbench.DefaultTreeCacheBytes>>20+*bodyBudgetMiB+*answerBudgetMiB+*readBudgetMiB)
	if err := checkDurations(map[string]time.Duration{"request-timeout": *requestTimeout, "idle-timeout": *idleTimeout, "shutdown-timeout": *shutdownTimeout, "write-timeout": *writeTimeout, "conn-idle-timeout": *connIdle, "commit-interval": *commitInterval, "gc-interval": *gcInterval}); err != nil {
		return usageErr("%v", err)
	}

	cfg, tokens, err := serveConfig(*configPath)
	if err != nil {
		return usageErr("%v", err)
	}
	listen := listenAddr(*addr)
	loop, err := serve.Loopback(listen)
	if err != nil {
		return usageErr("address %q: %v", listen, err)
	}
	if !loop && len(tokens) == 0 {
		return usageErr("refusing to listen on %s without bearer tokens: only a loopback address may serve without them (set agents in --config or CAIRN_TOKENS)", listen)
	}
	opts := serve.Options{
		Tokens:         tokens,
		RequestTimeout: pickDuration(*requestTimeout, time.Duration(cfg.RequestTimeout)),
		IdleTimeout:    pickDuration(*idleTimeout, time.Duration(cfg.IdleTimeout)),
		MCP:            mcpMount,
		Log:            log,
		WriteTimeout:   *writeTimeout,
		BodyBudget:     int64(*bodyBudgetMiB) << 20,
		BodyRate:       bodyRate(*bodyRateMiB),
		MCPBodyLimit:   mcpserve.BodyLimit(0),
		AnswerBudget:   int64(*answerBudgetMiB) << 20,
		AuthFailBurst:  *authFailBurst,
		Version:        shortVersion(),
		NoConsole:      !*consoleOn,
		ConsoleWrites:  *consoleWrites,
	}
	if *authFailBurst == 0 {
		return usageErr("--auth-fail-burst must not be 0 (negative: no limit)")
	}
	opts.Workbench.Engine.CacheBytes = int64(*cacheMiB) << 20
	opts.Workbench.ReadBudget = workbench.NewReadBudget(int64(*readBudgetMiB) << 20)
	opts.Workbench.Engine.MinCommitInterval = *commitInterval
	opts.Workbench.MemberTrees, opts.Workbench.ValueFormat = *memberTrees, *valueFormat
	grace := pickDuration(*shutdownTimeout, time.Duration(cfg.ShutdownTimeout), defaultShutdownTimeout)

	b, url, code, err := openBucket(ctx, *bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn serve: %v\n", err)
		return code
	}
	defer b.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn serve: listen: %v\n", err)
		return exitFailed
	}
	sweep, sweepMetrics := sweepEvery(b, log, *gcInterval)
	opts.ExtraMetrics = sweepMetrics
	return serveOn(ctx, ln, serve.New(b, opts), opts.Log, url, grace, conns{max: *maxConns, idle: *connIdle}, sweep)
}

// bodyRate is serve.Options.BodyRate for --body-rate-mib n: 0 is
// unpaced.
func bodyRate(n int) int64 {
	if n == 0 {
		return -1
	}
	return int64(n) << 20
}

// checkValueFormat refuses a --value-format this cairn does not create.
func checkValueFormat(v int) error {
	if v != 0 && (v > workbench.ValueFormat || v < workbench.OldestValueFormat) {
		return fmt.Errorf("--value-format %d: from %d to %d (0: %d)", v, workbench.OldestValueFormat, workbench.ValueFormat, workbench.ValueFormat)
	}
	return nil
}

// checkDurations refuses a negative duration flag, and a --gc-interval
// short enough to sweep without pause. Durations are named by their
// flags.
func checkDurations(durations map[string]time.Duration) error {
	for _, name := range slices.Sorted(maps.Keys(durations)) {
		if d := durations[name]; d < 0 {
			return fmt.Errorf("--%s is negative", name)
		}
	}
	if d := durations["gc-interval"]; d > 0 && (d < minSweepInterval || d > maxSweepInterval) {
		return fmt.Errorf("--gc-interval %v: from %v to %v (0: never)", d, minSweepInterval, maxSweepInterval)
	}
	// A write waits up to one interval for its head write: an interval
	// as long as a request's deadline would fail every write.
	if d, rt := durations["commit-interval"], cmp.Or(durations["request-timeout"], serve.DefaultRequestTimeout); d > maxCommitInterval || d >= rt {
		return fmt.Errorf("--commit-interval %v: from 0 to %v, and less than --request-timeout (%v)", d, maxCommitInterval, rt)
	}
	return nil
}

// maxCommitInterval bounds --commit-interval: GCS needs 1s.
const maxCommitInterval = time.Minute

// serveConfig reads serve's config file (path, else CAIRN_CONFIG; none
// is an empty config) and the bearer tokens of its agents and of
// CAIRN_TOKENS, which override the file's for an agent both name.
func serveConfig(path string) (serve.Config, map[string]string, error) {
	var cfg serve.Config
	if path := pick(path, os.Getenv("CAIRN_CONFIG")); path != "" {
		c, err := serve.LoadConfig(path)
		if err != nil {
			return cfg, nil, err
		}
		cfg = c
	}
	tokens, _ := cfg.Tokens() // LoadConfig checked them
	if env := os.Getenv("CAIRN_TOKENS"); env != "" {
		more, err := serve.ParseTokens(env)
		if err != nil {
			return cfg, nil, fmt.Errorf("CAIRN_TOKENS: %w", err)
		}
		for id, tok := range more {
			tokens[id] = tok
		}
	}
	return cfg, tokens, nil
}

// listenAddr is where serve listens: addr (the flag, CAIRN_ADDR or the
// config's addr), else :$PORT as a container platform asks, else the
// default loopback address.
func listenAddr(addr string) string {
	switch {
	case addr != "":
		return addr
	case os.Getenv("PORT") != "":
		return ":" + os.Getenv("PORT")
	}
	return defaultServeAddr
}

// checkMiB refuses a size in MiB below least, or too large for its bytes
// to fit an int64. Sizes are named by their flags.
func checkMiB(least int, sizes map[string]int) error {
	for _, name := range slices.Sorted(maps.Keys(sizes)) {
		switch v := sizes[name]; {
		case v < least:
			return fmt.Errorf("--%s must be at least %d", name, least)
		case v > maxMiB:
			return fmt.Errorf("--%s %d is more than %d (1 PiB)", name, v, maxMiB)
		}
	}
	return nil
}

// tuneHeap sets the heap's soft limit (0: none) and the collector's
// percent, each unless the Go runtime's own variable (GOMEMLIMIT, GOGC)
// is set.
func tuneHeap(memLimitMiB, gcPercent int) {
	if memLimitMiB > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(memLimitMiB) << 20)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// warnBudgets logs a warning when what the caches and the request
// budgets may hold together, in MiB, is more than the heap's soft limit
// (0: none): full, they would keep the collector running.
func warnBudgets(log *slog.Logger, memLimitMiB, budgetsMiB int) {
	if memLimitMiB > 0 && os.Getenv("GOMEMLIMIT") == "" && budgetsMiB > memLimitMiB {
		log.Warn("the caches and request budgets may hold more than the heap's soft limit; raise --memory-limit-mib or lower --cache-mib or a budget",
			slog.Int("budgets_mib", budgetsMiB), slog.Int("memory_limit_mib", memLimitMiB))
	}
}

// Connection and memory defaults of serve.
const (
	// defaultServeCacheMiB is serve's engine cache: with the block cache
	// (32 MiB), the tree cache (48 MiB) and the body, answer and read
	// budgets (320 MiB) it stays under the heap's soft limit,
	// defaultMemoryLimitMiB, with 16 MiB to spare. Three agents of
	// 100,000 files used 301 MiB of cache (BenchmarkThreeAgents100k).
	defaultServeCacheMiB = 352
	// defaultMemoryLimitMiB is the heap's soft limit: above the body,
	// answer and read budgets (320 MiB in all by default) and a working
	// set, so that garbage from refused work is collected before the
	// heap doubles.
	defaultMemoryLimitMiB = 768
	// defaultGCPercent is the collector's GOGC, Go's default. The heap's
	// goal is the live heap plus this share of it, under the soft limit
	// (defaultMemoryLimitMiB), which bounds it whatever the share. At 50
	// the collector was a quarter of a loaded server's CPU; three agents
	// of 100,000 files peaked at 605-617 MiB resident at 50 and 754 MiB
	// at 100, their phases 10-20% faster at 100; a 90 MiB body, which
	// once set 50, is now refused before it is parsed
	// (docs/performance.md, "The collector at Go's default").
	defaultGCPercent = 100
	// maxMiB is the largest size flag in MiB: 1 PiB, whose bytes fit an
	// int64 with room to spare.
	maxMiB = 1 << 30
	// defaultMaxConns bounds the connections open at once. A put waits
	// for its group commit, about one to two head intervals (1 s on
	// GCS), with its connection open, so 1,000 puts a second need 1,000
	// to 2,500 connections; at 512 one replica topped out near 350 puts
	// a second through `cairn bench --served` (docs/performance.md). A
	// connection between requests holds a goroutine and two 4 KiB
	// buffers: 4,096 of them are about 80 MiB.
	defaultMaxConns = 4096
	defaultConnIdle = 60 * time.Second
	maxHeaderBytes  = 64 << 10
)

// conns are serve's connection settings.
type conns struct {
	max  int
	idle time.Duration
}

// newLogger is serve's logger at level, in format (json or text).
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want json or text", format)
}

// serveOn serves srv on ln until ctx is done, then shuts down gracefully
// within grace.
func serveOn(ctx context.Context, ln net.Listener, srv *serve.Server, log *slog.Logger, url string, grace time.Duration, c conns, background func(context.Context)) int {
	limit := serve.NewConnLimit(c.max)
	ln = limit.Listener(ln)
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       c.idle,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         limit.ConnState,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Streams (the console's live tail) end when shutdown begins: they
	// would otherwise hold it for the rest of their life.
	hs.RegisterOnShutdown(srv.EndStreams)
	log.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("bucket", url), slog.Bool("authenticated", srv.Authenticated()))
	failed := make(chan error, 1)
	go func() { failed <- hs.Serve(ln) }()
	// Background work (the sweeper) ends with serving.
	bctx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	if background != nil {
		bg.Go(func() { background(bctx) })
	}
	defer func() { stopBackground(); bg.Wait() }()
	code := exitOK
	select {
	case err := <-failed:
		log.Error("serve", slog.String("error", err.Error()))
		code = exitFailed
	case <-ctx.Done():
		log.Info("shutting down", slog.String("grace", grace.String()))
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		err := hs.Shutdown(sctx)
		cancel()
		if err != nil {
			log.Warn("requests still in flight at the end of the grace period", slog.String("error", err.Error()))
			hs.Close()
		}
		if err := <-failed; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serve", slog.String("error", err.Error()))
			code = exitFailed
		}
	}
	srv.Close()
	log.Info("stopped")
	return code
}

// pick returns the first non-empty value.
func pick(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// pickDuration returns the first positive duration, or 0 (the default).
func pickDuration(values ...time.Duration) time.Duration {
	for _, v := range values {
		if v > 0 {
			return v
		}
	}
	return 0
}
