package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/workbench"
)

// The console is a set of read-only HTML pages under /ui/ for the people
// behind the agents and the operators of the bucket: agents, their
// workbenches, directories and files, commits, snapshots, restores,
// pins, the background sweep and a live tail of the change feed. Every
// page reads through the same typed Service and the same validated head
// as the tools; nothing is kept between requests but the login cookie.
//
// Access follows the API's: a server without tokens serves the console
// to loopback clients only; with tokens, a person logs in with an
// agent's token (a form that sets an HttpOnly, SameSite=Strict cookie
// holding it, never a URL) and sees the agents that token is for. The
// pages are HTML rendered on the server from embedded templates, with a
// small script for the live tail and its chart; nothing is built.

//go:embed console
var consoleFiles embed.FS

// consoleCookie names the login cookie.
const consoleCookie = "cairn_console"

// consoleBodyShown is the most of a body a file page reads and renders;
// the rest is a download.
const consoleBodyShown = 256 << 10

// console serves /ui/.
type console struct {
	s      *Server
	pages  *template.Template
	static http.Handler
	mux    *http.ServeMux
}

func newConsole(s *Server) *console {
	c := &console{s: s}
	c.pages = template.Must(template.New("").Funcs(consoleFuncs).ParseFS(consoleFiles, "console/*.html"))
	static, err := fs.Sub(consoleFiles, "console/static")
	if err != nil {
		panic(err)
	}
	c.static = http.StripPrefix("/ui/static/", http.FileServerFS(static))
	m := http.NewServeMux()
	get := func(pattern string, h func(http.ResponseWriter, *http.Request, *session)) {
		m.HandleFunc("GET "+pattern, c.guard(h))
	}
	post := func(pattern string, h func(http.ResponseWriter, *http.Request, *session)) {
		m.HandleFunc("POST "+pattern, c.guard(c.sameOrigin(h)))
	}
	m.HandleFunc("GET /ui/static/", c.serveStatic)
	m.HandleFunc("GET /ui/login", c.serveLoginForm)
	m.HandleFunc("POST /ui/login", c.sameOriginPlain(c.serveLogin))
	m.HandleFunc("POST /ui/logout", c.sameOriginPlain(c.serveLogout))
	get("/ui/{$}", c.serveHome)
	get("/ui/a/{$}", c.serveOpenAgent)
	get("/ui/a/{agent}/{$}", c.serveAgent)
	get("/ui/a/{agent}/events", c.serveEvents)
	get("/ui/a/{agent}/pins", c.servePins)
	post("/ui/a/{agent}/pins/{pin}/verify", c.serveVerifyPin)
	post("/ui/a/{agent}/pins", c.writesOnly(c.serveCreatePin))
	get("/ui/a/{agent}/w/{$}", c.serveOpenWorkbench)
	get("/ui/a/{agent}/w/{wb}/{$}", c.serveWorkbench)
	get("/ui/a/{agent}/w/{wb}/commit", c.serveCommit)
	get("/ui/a/{agent}/w/{wb}/ls/{path...}", c.serveList)
	get("/ui/a/{agent}/w/{wb}/f/{path...}", c.serveFile)
	get("/ui/a/{agent}/w/{wb}/raw/{path...}", c.serveRaw)
	post("/ui/a/{agent}/w/{wb}/snapshots/{snap}/retire", c.writesOnly(c.serveRetire))
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	c.mux = m
	return c
}

func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if rec := recorderOf(w); rec != nil {
		rec.tool = "console"
	}
	c.mux.ServeHTTP(w, r)
}

func (c *console) serveStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	c.static.ServeHTTP(w, r)
}

// A session is who is looking: the agents the request may see.
type session struct {
	// All: every agent id (a server without tokens).
	All bool
	// Agents the login token is for, sorted.
	Agents []string
	// LoggedIn: the session came from a login (it may log out).
	LoggedIn bool
}

func (se *session) may(agent string) bool {
	return se.All || slices.Contains(se.Agents, agent)
}

// guard admits a request to a page: from loopback without tokens, else
// with a login (the cookie, or an Authorization header for scripts). A
// page request without one is sent to the login form; with a token that
// is no agent's, refused there.
func (c *console) guard(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.s
		if len(s.tokens) == 0 {
			if !loopbackClient(r) {
				c.fail(w, r, nil, http.StatusForbidden, "This server has no tokens, so its console is served to loopback clients only.")
				return
			}
			if !loopbackHost(r.Host) {
				// A page of another site whose name was made to resolve to
				// 127.0.0.1 (DNS rebinding) would be same-origin with the
				// console: without tokens, only a loopback name is served.
				c.fail(w, r, nil, http.StatusForbidden, "This server has no tokens, so its console answers only at a loopback address (127.0.0.1, [::1] or localhost), not at "+r.Host+".")
				return
			}
			h(w, r, &session{All: true})
			return
		}
		addr := clientAddr(r)
		if c.loginBlocked(w, r, addr) {
			return
		}
		tok, present := consoleToken(r)
		if !present {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") && !strings.Contains(r.URL.Path, "/raw/") {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.fail(w, r, nil, http.StatusUnauthorized, "Log in first.")
			return
		}
		agents := s.agentsOf(tok)
		if len(agents) == 0 {
			s.authFails.failed(addr, time.Now())
			clearConsoleCookie(w, r)
			w.WriteHeader(http.StatusUnauthorized)
			c.render(w, r, nil, "login", loginPage{Next: r.URL.RequestURI(), Refused: true})
			return
		}
		h(w, r, &session{Agents: agents, LoggedIn: true})
	}
}

// loginBlocked refuses a request from addr with 429 when it has no
// failed login left to spend (the API's limit, authLimiter).
func (c *console) loginBlocked(w http.ResponseWriter, r *http.Request, addr string) bool {
	blocked, wait := c.s.authFails.blocked(addr, time.Now())
	if blocked {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		c.fail(w, r, nil, http.StatusTooManyRequests, "Too many failed logins from this address; try again in a few seconds.")
	}
	return blocked
}

// consoleToken is the request's login token: the cookie's, or a bearer
// token.
func consoleToken(r *http.Request) (string, bool) {
	if ck, err := r.Cookie(consoleCookie); err == nil && ck.Value != "" {
		return ck.Value, true
	}
	return bearer(r)
}

// agentsOf returns the agents whose token tok is, sorted. Every token is
// compared, in constant time, whatever matches.
func (s *Server) agentsOf(tok string) []string {
	got := sha256.Sum256([]byte(tok))
	var out []string
	for agent, want := range s.tokens {
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			out = append(out, agent)
		}
	}
	slices.Sort(out)
	return out
}

// loopbackHost reports whether a Host header names a loopback address or
// localhost.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackClient(r *http.Request) bool {
	ip := net.ParseIP(clientAddr(r))
	return ip != nil && ip.IsLoopback()
}

// sameOrigin refuses a form post from another site: the cookie is
// SameSite=Strict already, and a browser's Origin header, when sent,
// must name this host.
func (c *console) sameOrigin(h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, se *session) {
		if !sameOriginRequest(r) {
			c.fail(w, r, se, http.StatusForbidden, "A form of another site may not post here.")
			return
		}
		h(w, r, se)
	}
}

func (c *console) sameOriginPlain(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOriginRequest(r) {
			c.fail(w, r, nil, http.StatusForbidden, "A form of another site may not post here.")
			return
		}
		h(w, r)
	}
}

func sameOriginRequest(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// loginPage is the login form's data.
type loginPage struct {
	Next    string
	Refused bool
}

func (c *console) serveLoginForm(w http.ResponseWriter, r *http.Request) {
	if len(c.s.tokens) == 0 {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	c.render(w, r, nil, "login", loginPage{Next: safeNext(r.URL.Query().Get("next"))})
}

// serveLogin checks the posted token and sets the cookie.
func (c *console) serveLogin(w http.ResponseWriter, r *http.Request) {
	s := c.s
	if len(s.tokens) == 0 {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	addr := clientAddr(r)
	if c.loginBlocked(w, r, addr) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, nil, http.StatusBadRequest, "The login form could not be read.")
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	next := safeNext(r.PostForm.Get("next"))
	if tok == "" || len(s.agentsOf(tok)) == 0 {
		s.authFails.failed(addr, time.Now())
		w.WriteHeader(http.StatusUnauthorized)
		c.render(w, r, nil, "login", loginPage{Next: next, Refused: true})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: consoleCookie, Value: tok, Path: "/ui/",
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *console) serveLogout(w http.ResponseWriter, r *http.Request) {
	clearConsoleCookie(w, r)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

func clearConsoleCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: "", Path: "/ui/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// safeNext keeps a redirect after login inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}

// withAgent runs fn with the open agent of the request's {agent}, once
// the session may see it.
func (c *console) withAgent(w http.ResponseWriter, r *http.Request, se *session, fn func(*agent)) {
	id, ok := c.agentOf(w, r, se)
	if !ok {
		return
	}
	a, err := c.s.pool.acquire(r.Context(), id)
	if err != nil {
		c.failErr(w, r, se, err)
		return
	}
	defer c.s.pool.release(a)
	fn(a)
}

// agentOf returns the request's {agent}, once the session may see it;
// else it answers 404 itself.
func (c *console) agentOf(w http.ResponseWriter, r *http.Request, se *session) (string, bool) {
	id := r.PathValue("agent")
	if rec := recorderOf(w); rec != nil {
		rec.agent = id
	}
	if !se.may(id) {
		c.fail(w, r, se, http.StatusNotFound, "Agent "+id+" is not served to this login.")
		return "", false
	}
	return id, true
}

// page is what every page's layout reads.
type page struct {
	Title    string
	Crumbs   []crumb
	Session  *session
	Writes   bool
	Body     any
	Version  string
	Template string
}

type crumb struct{ Name, Href string }

// render writes page name with data in the layout.
func (c *console) render(w http.ResponseWriter, r *http.Request, se *session, name string, data any, crumbs ...crumb) {
	p := page{Title: titleOf(name, crumbs), Crumbs: crumbs, Session: se, Writes: c.s.opts.ConsoleWrites, Body: data, Version: c.s.opts.Version, Template: name}
	var buf bytes.Buffer
	if err := c.pages.ExecuteTemplate(&buf, "layout", p); err != nil {
		c.s.log.Error("console page", "page", name, "error", err.Error())
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

func titleOf(name string, crumbs []crumb) string {
	if len(crumbs) > 0 {
		return crumbs[len(crumbs)-1].Name + " · cairn"
	}
	return "cairn"
}

// errorPage is the data of an error.
type errorPage struct {
	Status  int
	Message string
	Code    string
}

func (c *console) fail(w http.ResponseWriter, r *http.Request, se *session, status int, msg string) {
	w.WriteHeader(status)
	c.render(w, r, se, "error", errorPage{Status: status, Message: msg})
}

// failErr shows a tool's error as the API would: its code and message,
// with the status the code maps to.
func (c *console) failErr(w http.ResponseWriter, r *http.Request, se *session, err error) {
	if errors.Is(err, errPoolClosed) {
		c.fail(w, r, se, http.StatusServiceUnavailable, "The server is shutting down.")
		return
	}
	werr := workbench.FromError(err)
	status := Status(werr.Code, werr.Retryable)
	if werr.Retryable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	c.render(w, r, se, "error", errorPage{Status: status, Message: werr.Message, Code: werr.Code})
}

// reading runs page for the request's agent (withAgent) with a context
// that bounds the page's work as a tool call's and pins the agent's head
// once for all its reads (core.Service.WithPinned): the parts of one
// page show one state, and a page reads the head once, not once a part.
// A failure to pin is answered here.
func (c *console) reading(w http.ResponseWriter, r *http.Request, se *session, page func(ctx context.Context, a *agent)) {
	c.withAgent(w, r, se, func(a *agent) {
		ctx, cancel := c.requestContext(r)
		defer cancel()
		pinned, werr := a.svc.PinnedContext(ctx)
		if werr != nil {
			c.failErr(w, r, se, werr)
			return
		}
		page(pinned, a)
	})
}

// requestContext bounds a page's work as a tool call's.
func (c *console) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.s.opts.RequestTimeout)
}
