package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
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

// callServer posts the call to POST {server}/v1/agents/{agent}/tools/{tool}
// and prints the result as the local mode does. A result, success or
// error envelope, is printed on standard output and exits 0 or 1. A server
// that cannot be reached, answers something that is not a result, refuses
// the token or does not serve the agent exits 3 with a message on
// standard error: as a bucket that cannot be used, nothing was done.
func callServer(ctx context.Context, e *env, c remoteCall) int {
	target := strings.TrimSuffix(c.server, "/") + "/v1/agents/" + url.PathEscape(c.agent) + "/tools/" + url.PathEscape(c.tool)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(c.input))
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn workbench: %v\n", err)
		return exitUsage
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.key != "" {
		req.Header.Set("Idempotency-Key", c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn workbench: server %s: %v\n", c.server, err)
		return exitStore
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn workbench: server %s: read the response: %v\n", c.server, err)
		return exitStore
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
	fmt.Fprintf(e.stdout, "%s\n", body)
	if env.Status != "success" {
		return exitFailed
	}
	return exitOK
}

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
