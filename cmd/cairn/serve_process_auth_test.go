package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestServeProcessTokens runs `cairn serve` as a process with
// CAIRN_TOKENS=a1=t1,a2=t2 and checks, for the tool routes and the MCP
// endpoint, that a missing or wrong token is 401, that one agent's token
// does not open the other's routes, and that a refused call changed
// nothing.
func TestServeProcessTokens(t *testing.T) {
	bin := cairnBinary(t)
	p := startServeProc(t, bin, t.TempDir(), []string{"CAIRN_TOKENS=a1=token-one-0123456789,a2=token-two-0123456789"},
		"--addr", "127.0.0.1:0", "--bucket", "file://"+t.TempDir(), "--auth-fail-burst", "-1") // this test fails on purpose, often
	if strings.Contains(p.stderr.String(), "token-one-0123456789") {
		t.Fatalf("the log shows a token: %s", p.stderr.String())
	}
	c := &http.Client{}
	defer c.CloseIdleConnections()
	bearer := func(tok string) []string {
		if tok == "" {
			return nil
		}
		return []string{"Authorization", "Bearer " + tok}
	}
	tool := func(agent, name string) string { return p.base + "/v1/agents/" + agent + "/tools/" + name }
	mcp := func(agent string) string { return p.base + "/v1/agents/" + agent + "/mcp" }
	const accept = "application/json, text/event-stream"
	mcpList := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	mcpCreate := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"intruder"}}}`

	for _, c2 := range []struct {
		name, url, body, token string
		invalid                bool // the token was sent, and refused
	}{
		{"a1 tools without a token", tool("a1", "workbench_create"), `{"id":"intruder"}`, "", false},
		{"a1 tools with a wrong token", tool("a1", "workbench_create"), `{"id":"intruder"}`, "t3", true},
		{"a1 tools with a2's token", tool("a1", "workbench_create"), `{"id":"intruder"}`, "token-two-0123456789", true},
		{"a2 tools with a1's token", tool("a2", "workbench_create"), `{"id":"intruder"}`, "token-one-0123456789", true},
		{"a2 tools with a token differing in case", tool("a2", "workbench_create"), `{"id":"intruder"}`, "T2", true},
		{"a1 MCP without a token", mcp("a1"), mcpList, "", false},
		{"a1 MCP with a wrong token", mcp("a1"), mcpCreate, "t3", true},
		{"a2 MCP with a1's token", mcp("a2"), mcpCreate, "token-one-0123456789", true},
		{"a1 MCP with a2's token", mcp("a1"), mcpCreate, "token-two-0123456789", true},
	} {
		ans, err := post(c, c2.url, c2.body, append(bearer(c2.token), "Accept", accept)...)
		if err != nil {
			t.Fatal(err)
		}
		auth := ans.header.Get("WWW-Authenticate")
		if ans.status != 401 || ans.code() != "Unauthenticated" || !strings.HasPrefix(auth, "Bearer") || strings.Contains(auth, "invalid_token") != c2.invalid {
			t.Errorf("%s: %d %q %s", c2.name, ans.status, auth, ans.body)
		}
	}
	// An agent not configured is not served, whatever the token.
	if ans, err := post(c, tool("a3", "workbench_create"), `{"id":"x"}`, bearer("token-one-0123456789")...); err != nil || ans.status != 404 || ans.code() != "UnknownAgent" {
		t.Errorf("an agent not configured: %d %s %v", ans.status, ans.body, err)
	}

	// Each token opens its own agent's routes, and none of the refused
	// calls above created anything.
	for _, a := range []struct{ agent, token string }{{"a1", "token-one-0123456789"}, {"a2", "token-two-0123456789"}} {
		ans, err := post(c, tool(a.agent, "workbench_stat"), `{"id":"intruder"}`, bearer(a.token)...)
		if err != nil || ans.status != 404 || ans.code() != "NotFound" {
			t.Errorf("%s: stat of a workbench only refused calls named: %d %s %v", a.agent, ans.status, ans.body, err)
		}
		ans, err = post(c, tool(a.agent, "workbench_create"), `{"id":"own"}`, bearer(a.token)...)
		if err != nil || ans.status != 200 {
			t.Errorf("%s with its own token: %d %s %v", a.agent, ans.status, ans.body, err)
		}
		ans, err = post(c, mcp(a.agent), mcpList, append(bearer(a.token), "Accept", accept)...)
		if err != nil || ans.status != 200 || !strings.Contains(string(ans.body), `"workbench_restore"`) {
			t.Errorf("%s MCP tools/list with its own token: %d %s %v", a.agent, ans.status, ans.body, err)
		}
	}
}
