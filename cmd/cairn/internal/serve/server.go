package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
	"golang.org/x/sync/semaphore"
)

// Defaults of Options.
const (
	DefaultRequestTimeout = 60 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultWriteTimeout   = 30 * time.Second
	DefaultBodyBudget     = 128 << 20
	DefaultBodyWait       = 2 * time.Second
	// DefaultBodyRatePerCore is Options.BodyRate's default for each
	// core the process may use (GOMAXPROCS): reading a body costs CPU by
	// the byte, about a core-second a GiB on loopback, so the rate that
	// leaves the cores to small calls grows with them.
	DefaultBodyRatePerCore = 32 << 20
	DefaultAnswerBudget    = 64 << 20
)

// DefaultBodyRate is Options.BodyRate's default: DefaultBodyRatePerCore
// for each core the process may use.
func DefaultBodyRate() int64 { return DefaultBodyRatePerCore * int64(runtime.GOMAXPROCS(0)) }

// CallFunc runs one Workbench tool on its JSON input for one agent and
// returns the JSON result and whether it is a success, as
// workbench.Service.Call does. It is what an MCP handler is built on.
type CallFunc func(ctx context.Context, tool string, input []byte) (result []byte, ok bool)

// Options configure a Server. The zero value serves any agent without
// authentication (for loopback only: the caller checks the address).
type Options struct {
	// Tokens maps each agent id served to its bearer token. When it is
	// not empty only these agents are served, each only to a request
	// bearing its token; when empty every agent id is served, its root
	// created on first use, without authentication.
	Tokens map[string]string
	// RequestTimeout bounds each request's work. Default
	// DefaultRequestTimeout. A write whose head write was sent when it
	// runs out is still settled before the answer (workbench.Service).
	RequestTimeout time.Duration
	// IdleTimeout is how long an agent's engine stays open with no
	// request. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// IdempotencyLease is how long a request holds an Idempotency-Key
	// before another may take it over (its owner is taken to have
	// crashed). Default RequestTimeout + 30 s: longer than any request
	// may run.
	IdempotencyLease time.Duration
	// Workbench configures each agent's Service; its AgentID is set per
	// agent.
	Workbench workbench.Options
	// MCP, if set, builds the MCP handler of one agent, mounted at
	// /v1/agents/{agent_id}/mcp behind the same authentication.
	MCP func(call CallFunc) http.Handler
	// WriteTimeout is how long past its deadline (RequestTimeout) a
	// request's answer may take to be written. A client that does not
	// read its answer is cut off then, and what the answer holds in
	// memory is freed. Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// BodyBudget bounds the bytes of request bodies held in memory at
	// once, across every request. A body that does not fit waits for room
	// for up to BodyWait, then is refused with 503 ServerBusy (retryable)
	// before it is read. A body larger than the whole budget waits for
	// the whole budget. An eighth of the budget is kept for small bodies
	// (smallBody bytes or less), so that a small call never queues behind
	// large bodies waiting for room. Default DefaultBodyBudget.
	BodyBudget int64
	// BodyWait is how long a body waits for room in BodyBudget. Default
	// DefaultBodyWait.
	BodyWait time.Duration
	// BodyRate bounds how fast request bodies larger than 256 KiB (or of
	// undeclared length) are read, in bytes a second, across every
	// request; small bodies are never paced. Default DefaultBodyRate();
	// negative: unpaced.
	BodyRate int64
	// MCPBodyLimit is the largest MCP request body read. Default: the
	// largest tool input (an edit's, workbench.MaxInputBytes) plus 64 KiB
	// of framing, as mcpserve.BodyLimit.
	MCPBodyLimit int64
	// AnswerBudget bounds the bytes of large answers (64 KiB or more)
	// being written at once, across every request, so that clients that
	// do not read their answers cannot pin memory beyond it. A read-only
	// tool's answer that finds no room at once is dropped for 503
	// ServerBusy (retryable: nothing was changed); a writer's answer is
	// written anyway, for its change is made. Default DefaultAnswerBudget.
	AnswerBudget int64
	// AuthFailBurst is how many failed authentications a client address
	// may make at once before it is refused 429 TooManyRequests; it earns
	// one more a second. Default DefaultAuthFailBurst; negative: no limit.
	AuthFailBurst int
	// ExtraMetrics, if set, gives more series for /metrics, written after
	// the server's own (the background sweeper's, cmd/cairn).
	ExtraMetrics func() []Sample
	// Version is the build's version, for cairn_build_info. Default
	// "(devel)".
	Version string
	// Log receives one line per request. Default: discard.
	Log *slog.Logger
	// Now is the clock of the idempotency records. Default time.Now.
	Now func() time.Time
	// NoConsole turns off the web console at /ui/ (console.go).
	NoConsole bool
	// ConsoleWrites lets the console retire snapshots and create pins;
	// without it the console changes nothing.
	ConsoleWrites bool
}

// Server serves the Workbench tools of many agent roots over HTTP from one
// bucket. It holds no state a replica needs to share: any number of
// Servers may serve one bucket.
type Server struct {
	opts    Options
	counted *counting.Bucket
	tokens  map[string]tokenDigest
	pool    *pool
	metrics *metrics
	log     *slog.Logger
	handler http.Handler
	openapi []byte
	// authFails rate-limits failed authentication per client address.
	authFails authLimiter
	// bodies holds the bytes of request bodies in memory (BodyBudget).
	bodies *bodyBudget
	// pace paces the reading of bodies that are not small (BodyRate).
	pace *pacer
	// answers holds the bytes of large answers being written
	// (AnswerBudget); answering counts them, for the metrics.
	answers   *semaphore.Weighted
	answering atomic.Int64

	closeOnce sync.Once
	// streamsDone is closed by EndStreams.
	streamsDone chan struct{}
	endStreams  sync.Once
	// streams counts the open event streams (maxStreams).
	streams atomic.Int64
}

// New returns a Server over b. Close it after the HTTP server that uses
// its Handler has shut down.
func New(b bucket.Bucket, opts Options) *Server {
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.IdempotencyLease <= 0 {
		opts.IdempotencyLease = opts.RequestTimeout + 30*time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.BodyBudget <= 0 {
		opts.BodyBudget = DefaultBodyBudget
	}
	if opts.AuthFailBurst == 0 {
		opts.AuthFailBurst = DefaultAuthFailBurst
	}
	if opts.AnswerBudget <= 0 {
		opts.AnswerBudget = DefaultAnswerBudget
	}
	if opts.BodyWait <= 0 {
		opts.BodyWait = DefaultBodyWait
	}
	if opts.BodyRate == 0 {
		opts.BodyRate = DefaultBodyRate()
	}
	if opts.MCPBodyLimit <= 0 {
		opts.MCPBodyLimit = workbench.MaxInputBytes("workbench_edit", opts.Workbench.MaxBytes) + 64<<10
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "(devel)"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Workbench.ReadBudget == nil {
		// One budget for the whole-body reads of every agent served.
		opts.Workbench.ReadBudget = workbench.NewReadBudget(0)
	}
	if opts.Workbench.BlockCache == nil {
		// One cache of small blocks for every agent served, too.
		opts.Workbench.BlockCache = bodies.NewBlockCache(opts.Workbench.BlockCacheBytes)
	}
	if opts.Workbench.TreeCache == nil {
		// And one of member tree nodes.
		opts.Workbench.TreeCache = workbench.NewTreeCache(opts.Workbench.TreeCacheBytes)
	}
	if opts.Workbench.Engine.Caches == nil {
		// One cache budget for the process, shared by every agent served,
		// however many are open.
		opts.Workbench.Engine.Caches = head.NewCaches(opts.Workbench.Engine.CacheBytes)
	}
	cb := counting.New(b)
	s := &Server{
		bodies:    newBodyBudget(opts.BodyBudget),
		pace:      &pacer{rate: float64(opts.BodyRate)},
		answers:   semaphore.NewWeighted(opts.AnswerBudget),
		authFails: authLimiter{burst: float64(max(opts.AuthFailBurst, 0))},
		opts:      opts,
		counted:   cb,
		tokens:    map[string]tokenDigest{},
		pool:      newPool(cb, opts.Workbench, opts.IdleTimeout, opts.MCP),
		metrics:   newMetrics(),
		log:       opts.Log,

		streamsDone: make(chan struct{}),
	}
	for agent, tok := range opts.Tokens {
		s.tokens[agent] = sha256.Sum256([]byte(tok))
	}
	s.openapi = openAPI(len(s.tokens) > 0, opts.MCP != nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/agents/{agent_id}/tools/{tool_name}", s.method(http.MethodPost, s.serveTool))
	mux.HandleFunc("/v1/agents/{agent_id}/mcp", s.serveMCP)
	mux.HandleFunc("/openapi.json", s.method(http.MethodGet, s.serveOpenAPI))
	mux.HandleFunc("/healthz", s.method(http.MethodGet, s.serveHealth))
	mux.HandleFunc("/readyz", s.method(http.MethodGet, s.serveReady))
	mux.HandleFunc("/metrics", s.method(http.MethodGet, s.serveMetrics))
	if !opts.NoConsole {
		mux.Handle("/ui/", newConsole(s))
		mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &workbench.Error{Code: CodeRouteNotFound, Message: "no route " + r.URL.Path, Details: map[string]any{"path": r.URL.Path}})
	})
	h := canonicalPaths(mux)
	if len(s.tokens) == 0 {
		h = loopbackNames(h)
	}
	s.handler = s.observe(h)
	return s
}

// loopbackNames refuses, on a server without tokens, a request that
// reached a loopback address under a Host that is not a loopback name,
// with 403 ForeignHost: a page of another site whose name its owner made
// resolve to 127.0.0.1 (DNS rebinding) is same-origin with that name, so
// a browser would let it call the tools, and read the answers, of a
// server that trusts whoever reaches its loopback address. The console
// answers such a request itself, with a page (console.guard).
func loopbackNames(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		// An HTTP/1.0 request may carry no Host at all; a browser always
		// sends one, so none is no rebinding.
		if local != nil && loopbackHost(local.String()) && r.Host != "" && !loopbackHost(r.Host) && !strings.HasPrefix(r.URL.Path, "/ui/") {
			writeError(w, &workbench.Error{Code: CodeForeignHost,
				Message: "this server has no tokens, so it answers only at a loopback name (127.0.0.1, [::1] or localhost), not at " + r.Host,
				Details: map[string]any{"host": r.Host}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// canonicalPaths refuses a request whose path is not canonical (a "." or
// ".." segment, or an empty one from repeated slashes) with 400
// InvalidArguments, details {path}, where ServeMux would redirect it to
// the cleaned path (307): "/v1/agents/../tools/T" would otherwise be sent
// on to another route, and "/v1/agents/a2/../a1/..." to another agent.
// An agent id "." or ".." cannot form a root, which is 400 in any case.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); r.Method != http.MethodConnect && !canonicalPath(p) {
			writeError(w, &workbench.Error{Code: workbench.CodeInvalidArguments,
				Message: "request path " + p + " is not canonical: it has a '.', '..' or empty segment",
				Details: map[string]any{"path": p}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// canonicalPath reports whether p is what ServeMux's cleaning leaves
// unchanged: absolute, with no ".", ".." or empty segment (a trailing
// slash is kept).
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if c != "/" && strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c == p
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Close closes every open agent engine. Call it once the HTTP server has
// shut down: requests still running (the shutdown's grace ran out) are
// waited for first, at most drainWait, so that they settle on an open
// engine.
func (s *Server) Close() {
	s.EndStreams()
	s.closeOnce.Do(s.pool.close)
}

// EndStreams ends the open event streams (the console's live tail) and
// refuses new ones: call it when shutdown begins (http.Server's
// RegisterOnShutdown), for Shutdown waits for every request to end.
func (s *Server) EndStreams() {
	s.endStreams.Do(func() { close(s.streamsDone) })
}

// Authenticated reports whether the server requires bearer tokens.
func (s *Server) Authenticated() bool { return len(s.tokens) > 0 }

// method serves only requests of method m (GET also answers HEAD): any
// other is 405 with an Allow header.
func (s *Server) method(m string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != m && !(m == http.MethodGet && r.Method == http.MethodHead) {
			allow := m
			if m == http.MethodGet {
				allow = "GET, HEAD"
			}
			w.Header().Set("Allow", allow)
			writeError(w, &workbench.Error{Code: CodeMethodNotAllowed, Message: r.Method + " is not allowed here; use " + m, Details: map[string]any{"allow": allow}})
			return
		}
		h(w, r)
	}
}

// writeError writes werr's envelope with its status.
func writeError(w http.ResponseWriter, werr *workbench.Error) {
	body, err := workbench.MarshalResult(werr.Envelope())
	if err != nil {
		body = []byte(`{"code":"Internal","details":{},"message":"marshal error envelope","retryable":false,"status":"error"}`)
	}
	writeResult(w, body, false, werr.Code, werr.Retryable)
}

// writeResult writes a tool's result bytes with the status its envelope
// maps to: 200 for a success.
func writeResult(w http.ResponseWriter, body []byte, ok bool, code string, retryable bool) {
	if rec, isRec := w.(*recorder); isRec && !ok {
		rec.code, rec.message = code, messageOf(body)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	status := http.StatusOK
	if !ok {
		status = Status(code, retryable)
		if retryable && h.Get("Retry-After") == "" {
			h.Set("Retry-After", "1")
		}
		if status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
			h.Set("WWW-Authenticate", `Bearer realm="cairn"`)
		}
	}
	w.WriteHeader(status)
	w.Write(body)
	w.Write(newline) // so that an answer printed by curl ends its line
}

var newline = []byte("\n")

// messageOf reads the message member of an error result.
func messageOf(result []byte) string {
	var env struct {
		Message string `json:"message"`
	}
	json.Unmarshal(result, &env)
	return env.Message
}

// envelopeOf reads the code and retryable members of an error result.
func envelopeOf(result []byte) (code string, retryable bool) {
	var env struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}
	if err := json.Unmarshal(result, &env); err != nil {
		return workbench.CodeInternal, false
	}
	return env.Code, env.Retryable
}

// agentFor authenticates the request for its {agent_id} and holds the
// agent's engine open until the returned release is called. It writes the
// error response itself and returns nil when the request is refused.
func (s *Server) agentFor(w http.ResponseWriter, r *http.Request, rec *recorder) (*agent, func()) {
	id := r.PathValue("agent_id")
	if rec != nil {
		rec.agent = id
	}
	if len(s.tokens) > 0 {
		addr := clientAddr(r)
		if blocked, wait := s.authFails.blocked(addr, time.Now()); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
			writeError(w, &workbench.Error{Code: CodeTooManyRequests, Retryable: true,
				Message: "too many failed authentications from this address; retry later"})
			return nil, nil
		}
		want, configured := s.tokens[id]
		if !configured {
			s.authFails.failed(addr, time.Now()) // probing for agent ids fails too
			writeError(w, &workbench.Error{Code: CodeUnknownAgent, Message: "agent " + id + " is not served here", Details: map[string]any{"agent_id": id}})
			return nil, nil
		}
		ok, present := authorize(r, want)
		if !ok {
			challenge := `Bearer realm="cairn"`
			msg := "a bearer token is required"
			if present {
				challenge += `, error="invalid_token"`
				msg = "the bearer token is not the agent's"
			}
			s.authFails.failed(addr, time.Now())
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, &workbench.Error{Code: CodeUnauthenticated, Message: msg})
			return nil, nil
		}
	}
	a, err := s.pool.acquire(r.Context(), id)
	if errors.Is(err, errPoolClosed) {
		writeError(w, &workbench.Error{Code: CodeShuttingDown, Message: "the server is shutting down", Retryable: true})
		return nil, nil
	}
	if err != nil {
		writeError(w, workbench.FromError(err))
		return nil, nil
	}
	return a, func() { s.pool.release(a) }
}

// recorderOf returns the recorder observe wrapped w in.
func recorderOf(w http.ResponseWriter) *recorder {
	rec, _ := w.(*recorder)
	return rec
}

// serveTool is POST /v1/agents/{agent_id}/tools/{tool_name}.
func (s *Server) serveTool(w http.ResponseWriter, r *http.Request) {
	rec := recorderOf(w)
	tool := r.PathValue("tool_name")
	if rec != nil {
		rec.agent = r.PathValue("agent_id")
		rec.tool = tool
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			writeError(w, &workbench.Error{Code: CodeUnsupportedMedia, Message: "the request body must be application/json, not " + ct, Details: map[string]any{"content_type": ct}})
			return
		}
	}
	a, release := s.agentFor(w, r, rec)
	if a == nil {
		return
	}
	defer release()

	// The deadline covers reading the body too: a client that sends it
	// slowly cannot hold the agent past it.
	deadline := time.Now().Add(s.opts.RequestTimeout)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	// A read's charge lasts until its answer is written (or its write
	// deadline passes): a client that does not read holds the budget, not
	// more memory.
	ctx, answered := workbench.HoldUntilAnswered(ctx)
	defer answered()
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(deadline) // unsupported by test recorders only
	rc.SetWriteDeadline(deadline.Add(s.opts.WriteTimeout))

	input, oversize, release, werr := s.readBody(ctx, w, r, tool)
	if werr != nil {
		writeError(w, werr)
		return
	}
	defer release()
	if len(bytes.TrimSpace(input)) == 0 {
		input = []byte("{}") // as the command line takes an empty input
	}

	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		cctx := ctx
		if oversize >= 0 { // read by workbench.ReadPayloadInput
			cctx = workbench.WithOversizedText(ctx, oversize)
		}
		out, ok := a.svc.Call(cctx, tool, input)
		s.answer(ctx, w, tool, out, ok)
		return
	}
	s.serveKeyed(ctx, w, a, tool, key, input)
}

// serveKeyed runs a tool call bound to an Idempotency-Key (see
// docs/api.md, "Idempotency").
func (s *Server) serveKeyed(ctx context.Context, w http.ResponseWriter, a *agent, tool, key string, input []byte) {
	if werr := checkIdempotencyKey(key); werr != nil {
		writeError(w, werr)
		return
	}
	h := keyHash(a.id, key)
	d := &idem{
		b:     s.counted,
		key:   gcsweep.IdempotencyKey(a.svc.Store().Layout(), h),
		bind:  "cairn.http." + h.String()[:32],
		input: inputHash(tool, input),
	}
	outcome, err := d.claim(ctx, s.opts.Now(), s.opts.IdempotencyLease)
	if err != nil {
		writeError(w, workbench.FromError(err))
		return
	}
	switch outcome {
	case claimReplay:
		s.metrics.replayed()
		w.Header().Set("Idempotent-Replayed", "true")
		s.answer(ctx, w, tool, d.rec.Result, d.rec.OK)
		return
	case claimReused:
		writeError(w, &workbench.Error{Code: CodeIdempotencyKeyReused,
			Message: "the Idempotency-Key was used with another tool or input"})
		return
	case claimBusy:
		writeError(w, &workbench.Error{Code: CodeIdempotencyKeyInUse, Retryable: true,
			Message: "another request with this Idempotency-Key is running; retry later"})
		return
	}
	out, ok := a.svc.Call(workbench.WithRequestID(ctx, d.boundID()), tool, input)
	code, retryable := "", false
	if !ok {
		code, retryable = envelopeOf(out)
	}
	// The result is stored even when the caller has gone: a retry must
	// find it. A failure to store it leaves the key pending: a retry after
	// the lease runs the call again under the same request ids, and the
	// engine replays what this one committed.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer scancel()
	if err := d.finish(sctx, out, ok, code, retryable); err != nil {
		s.log.Warn("store idempotent result", slog.String("agent", a.id), slog.String("tool", tool), slog.String("error", err.Error()))
	}
	s.answer(ctx, w, tool, out, ok)
}

// answer writes a tool's result with its status.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, tool string, out []byte, ok bool) {
	code, retryable := "", false
	if !ok {
		code, retryable = envelopeOf(out)
	}
	release, werr := s.holdAnswer(tool, out)
	if werr != nil {
		writeError(w, werr)
		return
	}
	defer release()
	writeResult(w, out, ok, code, retryable)
}

// serveMCP mounts the agent's MCP handler.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if s.opts.MCP == nil {
		writeError(w, &workbench.Error{Code: CodeRouteNotFound, Message: "this server has no MCP endpoint", Details: map[string]any{"path": r.URL.Path}})
		return
	}
	a, release := s.agentFor(w, r, recorderOf(w))
	if a == nil {
		return
	}
	defer release()
	// As for a tool call: the deadline covers reading the body, which is
	// charged to the body budget and paced like a tool call's.
	deadline := time.Now().Add(s.opts.RequestTimeout)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	ctx, answered := workbench.HoldUntilAnswered(ctx)
	defer answered()
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(deadline)
	rc.SetWriteDeadline(deadline.Add(s.opts.WriteTimeout))
	if r.Method == http.MethodPost {
		input, releaseBody, werr := s.readWhole(ctx, w, r, s.opts.MCPBodyLimit)
		if werr != nil {
			writeError(w, werr)
			return
		}
		defer releaseBody()
		r.Body, r.ContentLength = heldBody{bytes.NewReader(input), input}, int64(len(input))
	}
	a.mcp.ServeHTTP(w, r.WithContext(ctx))
}

// A heldBody is a request body already read, by the server: Bytes gives
// it to a handler without a copy (mcpserve reads it so).
type heldBody struct {
	*bytes.Reader
	b []byte
}

func (h heldBody) Bytes() []byte { return h.b }
func (heldBody) Close() error    { return nil }

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openapi)
}

// serveHealth answers while the process runs.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// trusted reports whether r may see the server's details (bucket URLs in
// errors, agent ids): always on a server without tokens (it listens on
// loopback), else for a request from a loopback address or bearing any
// agent's token.
func (s *Server) trusted(r *http.Request) bool {
	if len(s.tokens) == 0 {
		return true
	}
	if ip := net.ParseIP(clientAddr(r)); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, want := range s.tokens {
		if ok, _ := authorize(r, want); ok {
			return true
		}
	}
	return false
}

// serveReady reads the bucket and the head of every open agent's shard:
// 200 when the bucket answers and every head validates, 503 otherwise.
// The failures and the number of open agents are told only to a trusted
// caller (trusted): to anyone else the status alone.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var failures []string
	if _, err := s.counted.List(ctx, bucket.ListOptions{Prefix: "cairn-probe/", PageSize: 1}); err != nil {
		failures = append(failures, "bucket: "+err.Error())
	}
	agents := s.pool.open()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() {
			if _, err := a.svc.Store().PinOrEmpty(ctx); err != nil {
				mu.Lock()
				failures = append(failures, "agent "+a.id+": "+err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(failures)
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"status": "ready"}
	detailed := s.trusted(r)
	if detailed {
		body["open_agents"] = len(agents)
	}
	if len(failures) > 0 {
		body["status"] = "unready"
		if detailed {
			body["failures"] = failures
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	out, _ := workbench.MarshalResult(body)
	w.Write(out)
}
