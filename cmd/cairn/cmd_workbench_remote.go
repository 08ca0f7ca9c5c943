package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/workbench"
)

// remoteCall is one tool call `cairn workbench --server` posts.
type remoteCall struct {
	server, token, key string
	agent, tool        string
	input              []byte
}

// checkServerURL refuses a --server that is not an http or https URL
// with a host.
func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q has a query or fragment", s)
	}
	return nil
}

// remoteSettle is how long `cairn workbench --server` still waits for
// the answer of a call it has sent once it is told to stop (SIGINT,
// SIGTERM): the server runs the call to its end whatever the client
// does, and a write whose head write was sent settles within the
// engine's settle timeout.
const remoteSettle = 15 * time.Second

// callServer posts the call to POST {server}/v1/agents/{agent}/tools/{tool}
// and prints the result as the local mode does. A result, success or
// error envelope, is printed on standard output and exits 0 or 1. A server
// that cannot be reached, answers something that is not a result, refuses
// the token or does not serve the agent exits 3 with a message on
// standard error: as a bucket that cannot be used, nothing was done.
//
// Once the request is sent the server may run it, so an exchange that
// fails after that (the connection breaks, or no answer comes within
// remoteSettle of a signal) prints the UnknownOutcome error result and
// exits 1: a retry with the same Idempotency-Key settles it. A signal
// before the request is sent ends the call at once.
func callServer(ctx context.Context, e *env, c remoteCall) int {
	target := strings.TrimSuffix(c.server, "/") + "/v1/agents/" + url.PathEscape(c.agent) + "/tools/" + url.PathEscape(c.tool)
	var sent atomic.Bool
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if !sent.Load() {
			cancel()
			return
		}
		time.AfterFunc(remoteSettle, cancel)
	})
	defer stop()
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			sent.Store(true)
		}
	}})
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, target, bytes.NewReader(c.input))
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn workbench: %v\n", err)
		return exitUsage
	}
	unknown := func(err error) int {
		fmt.Fprintf(e.stderr, "cairn workbench: server %s: the call was sent, and no answer came: %v\n", c.server, err)
		werr := &workbench.Error{Code: workbench.CodeUnknownOutcome, Retryable: true,
			Message: "the call was sent to the server and its answer was lost; it may have been applied (retry with the same Idempotency-Key to learn its outcome)"}
		out, _ := workbench.MarshalResult(werr.Envelope())
		fmt.Fprintf(e.stdout, "%s\n", out)
		return exitFailed
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.key != "" {
		req.Header.Set("Idempotency-Key", c.key)
	}
	resp, err := oneCall.Do(req)
	if err != nil {
		if sent.Load() {
			return unknown(err)
		}
		fmt.Fprintf(e.stderr, "cairn workbench: server %s: %v\n", c.server, err)
		return exitStore
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return unknown(fmt.Errorf("read the response: %w", err))
	}
	var env struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &env); err != nil || (env.Status != "success" && env.Status != "error") {
		fmt.Fprintf(e.stderr, "cairn workbench: server %s answered %s with no result (%s)\n", c.server, resp.Status, firstLine(body))
		return exitStore
	}
	switch env.Code {
	case serve.CodeUnauthenticated, serve.CodeUnknownAgent, serve.CodeRouteNotFound, serve.CodeShuttingDown:
		// The server, not the tool, refused: nothing was done.
		fmt.Fprintf(e.stderr, "cairn workbench: server %s: %s\n", c.server, env.Message)
		return exitStore
	}
	fmt.Fprintf(e.stdout, "%s\n", bytes.TrimSuffix(body, []byte("\n")))
	if env.Status != "success" {
		return exitFailed
	}
	return exitOK
}

// oneCall is the client of one call: a process makes one, so it keeps
// no connection for later. A kept one could be a dead server's, which a
// request would be written to before the refusal shows, and a call to a
// server that is gone would then look sent.
var oneCall = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}

// firstLine is the start of a body that is not a result, for a message.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "empty body"
	}
	return s
}
