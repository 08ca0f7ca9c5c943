package serve_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
)

// page gets path from h as a browser on addr would, with cookies, at
// the server's loopback address.
func page(h http.Handler, path, addr string, cookies ...*http.Cookie) response {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr, req.Host = addr, "127.0.0.1:7070"
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return do(h, req)
}

// form posts a form to h from addr, as a browser of this site would.
func form(h http.Handler, path, addr string, values url.Values, cookies ...*http.Cookie) response {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(values.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Host = "127.0.0.1:7070"
	req.Header.Set("Origin", "http://"+req.Host)
	req.RemoteAddr = addr
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return do(h, req)
}

// text is what a person reads of an HTML page: its tags dropped, its
// spaces folded.
func text(body []byte) string {
	s := regexp.MustCompile(`(?s)<script.*?</script>|<[^>]*>`).ReplaceAllString(string(body), " ")
	s = strings.NewReplacer("&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

const loopback = "127.0.0.1:40000"

// seedConsole writes a workbench of a few typed files through the API.
func seedConsole(t *testing.T, h http.Handler, agent string, headers ...string) {
	t.Helper()
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"))
	for _, call := range []struct{ tool, body string }{
		{"workbench_create", `{"id":"wb1"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"notes/readme.md","text":"# Findings\n\nThe *second* run.\n<script>alert(1)</script>\n\n[see](javascript:alert(2))\n"}`},
		{"workbench_put_file", `{"id":"wb1","section":"logs","path":"long.log","text":"` + strings.Repeat(`a line\n`, 6000) + `"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"table.csv","text":"city,count\nOslo,3\nLima,5\n"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"result.json","text":"{\"score\":1}"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"result.json","text":"{\"score\":2,\"runs\":[1,2]}","replace":true}`},
		{"workbench_put_file", `{"id":"wb1","section":"logs","path":"run.log","text":"started\nfinished\n"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"plot.png","base64":"` + png + `","content_type":"image/png"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"blob.bin","base64":"AAECA//+"}`},
		{"workbench_commit", `{"id":"wb1","manifest":{"task":"console test"},"content_digest_uri":"sha256:` + strings.Repeat("ab", 32) + `"}`},
		{"workbench_snapshot", `{"id":"wb1","name":"nightly"}`},
	} {
		if r := post(t, h, agent, call.tool, call.body, headers...); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", call.tool, r.status, r.body)
		}
	}
}

func TestConsolePages(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{})
	h := s.Handler()
	seedConsole(t, h, "ag1")
	for _, tc := range []struct {
		path string
		want []string
		not  []string
	}{
		{"/ui/", []string{"Agents", "ag1", "Maintenance"}, nil},
		{"/ui/a/ag1/", []string{"Agent ag1", "wb1 yes", "Live changes"}, nil},
		{"/ui/a/ag1/w/wb1/", []string{"Workbench wb1", "state Visible", "members 8 files", `"task": "console test"`, "nightly", "alive", "outputs"}, nil},
		{"/ui/a/ag1/w/wb1/ls/outputs/", []string{"blob.bin file 6 B", "notes/ directory", "plot.png file", "result.json file 24 B", "table.csv file"}, nil},
		{"/ui/a/ag1/w/wb1/f/outputs/notes/readme.md", []string{"Findings", "The second run.", "generation 1"}, []string{"alert(1)", "javascript:"}},
		{"/ui/a/ag1/w/wb1/f/logs/long.log", []string{"1 a line 2 a line", "5000 a line The first 5,000 lines."}, nil},
		{"/ui/a/ag1/w/wb1/f/outputs/table.csv", []string{"city count Oslo 3 Lima 5"}, nil},
		{"/ui/a/ag1/w/wb1/f/outputs/result.json", []string{`1 { 2 "score": 2, 3 "runs": [ 4 1, 5 2 6 ] 7 }`, "PathReplaced 2 24 B", "generation 1", "PathCreated 1 11 B", "nightly) alive 2 24 B"}, nil},
		{"/ui/a/ag1/w/wb1/f/outputs/blob.bin", []string{"A binary body of 6 B. Download"}, nil},
		{"/ui/a/ag1/w/wb1/commit", []string{"(the last) state Sealed", "members 8", "logs/run.log", "outputs/result.json 2 24 B"}, nil},
		{"/ui/a/ag1/pins", []string{"No pin."}, nil},
	} {
		r := page(h, tc.path, loopback)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.path, r.status, text(r.body))
		}
		got := text(r.body)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s does not say %q:\n%s", tc.path, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(string(r.body), n) {
				t.Errorf("%s holds %q", tc.path, n)
			}
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", tc.path, csp)
		}
	}
	if n := strings.Count(string(page(h, "/ui/a/ag1/w/wb1/f/logs/long.log", loopback).body), "<code>a line</code>"); n != 5000 {
		t.Errorf("a log of 6,000 lines shows %d", n)
	}
	// The image is shown from the raw route, as an image; anything else
	// is a download.
	if r := page(h, "/ui/a/ag1/w/wb1/f/outputs/plot.png", loopback); !strings.Contains(string(r.body), `<img src="/ui/a/ag1/w/wb1/raw/outputs/plot.png?inline=1"`) {
		t.Errorf("the image page has no inline image:\n%s", r.body)
	}
	r := page(h, "/ui/a/ag1/w/wb1/raw/outputs/plot.png?inline=1", loopback)
	if ct := r.header.Get("Content-Type"); ct != "image/png" || !strings.HasPrefix(string(r.body), "\x89PNG") {
		t.Errorf("inline image: %q, %q", ct, r.body)
	}
	r = page(h, "/ui/a/ag1/w/wb1/raw/outputs/notes/readme.md?inline=1", loopback)
	if ct, cd := r.header.Get("Content-Type"), r.header.Get("Content-Disposition"); ct != "application/octet-stream" || !strings.HasPrefix(cd, "attachment") || !strings.Contains(string(r.body), "<script>") {
		t.Errorf("download of Markdown: %q, %q, %q", ct, cd, r.body)
	}
	// The agent page's form opens a workbench by its id.
	if r := page(h, "/ui/a/ag1/w/?id=wb%2F1", loopback); r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/a/ag1/w/wb%2F1/" {
		t.Errorf("open a workbench by id: %d %q", r.status, r.header.Get("Location"))
	}
	// Errors are pages that say what the tool said.
	r = page(h, "/ui/a/ag1/w/nope/", loopback)
	if r.status != http.StatusNotFound || !strings.Contains(text(r.body), "workbench nope does not exist") {
		t.Errorf("a missing workbench: %d %s", r.status, text(r.body))
	}
	r = page(h, "/ui/a/ag1/w/wb1/f/outputs/missing.txt", loopback)
	if r.status != http.StatusNotFound || !strings.Contains(text(r.body), "NotFound") {
		t.Errorf("a missing file: %d %s", r.status, text(r.body))
	}
}

func TestConsoleListsPageByCursor(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{})
	h := s.Handler()
	post(t, h, "ag1", "workbench_create", `{"id":"wb1"}`)
	for i := range 150 {
		if r := post(t, h, "ag1", "workbench_put_file", fmt.Sprintf(`{"id":"wb1","section":"outputs","path":"f%03d.txt","text":"%d"}`, i, i)); r.status != http.StatusOK {
			t.Fatalf("put: %s", r.body)
		}
	}
	r := page(h, "/ui/a/ag1/w/wb1/ls/outputs/", loopback)
	first := text(r.body)
	if !strings.Contains(first, "f000.txt") || !strings.Contains(first, "f099.txt") || strings.Contains(first, "f100.txt") {
		t.Fatalf("first page:\n%s", first)
	}
	next := regexp.MustCompile(`<a rel="next" href="([^"]+)"`).FindSubmatch(r.body)
	if next == nil {
		t.Fatalf("no next page link:\n%s", r.body)
	}
	second := text(page(h, strings.ReplaceAll(string(next[1]), "&amp;", "&"), loopback).body)
	if strings.Contains(second, "f099.txt") || !strings.Contains(second, "f100.txt") || !strings.Contains(second, "f149.txt") {
		t.Fatalf("second page:\n%s", second)
	}
}

func TestConsoleAccess(t *testing.T) {
	t.Run("no tokens: loopback only", func(t *testing.T) {
		h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
		if r := page(h, "/ui/", "192.0.2.7:5000"); r.status != http.StatusForbidden {
			t.Errorf("a remote client without tokens: %d", r.status)
		}
		if r := page(h, "/ui/", "[::1]:5000"); r.status != http.StatusOK {
			t.Errorf("a loopback client: %d", r.status)
		}
		// A loopback client that names another host: a page of another
		// site rebound to 127.0.0.1.
		for host, want := range map[string]int{"evil.example:7070": http.StatusForbidden, "127.0.0.1:7070": http.StatusOK, "localhost:7070": http.StatusOK, "[::1]:7070": http.StatusOK, "LOCALHOST": http.StatusOK} {
			req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
			req.RemoteAddr, req.Host = loopback, host
			if r := do(h, req); r.status != want {
				t.Errorf("Host %s: %d, want %d", host, r.status, want)
			}
		}
	})
	t.Run("tokens", func(t *testing.T) {
		h := newServer(t, mem.NewBucket(), serve.Options{Tokens: map[string]string{"ag1": "tok-1", "ag2": "tok-2"}}).Handler()
		seedConsole(t, h, "ag1", "Authorization", "Bearer tok-1")
		const remote = "192.0.2.7:5000"
		// No login: the login form, whatever the page.
		r := page(h, "/ui/a/ag1/w/wb1/", remote)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/login?next=%2Fui%2Fa%2Fag1%2Fw%2Fwb1%2F" {
			t.Fatalf("no login: %d %q", r.status, r.header.Get("Location"))
		}
		if r := page(h, "/ui/login?next=/ui/a/ag1/w/wb1/", remote); !strings.Contains(text(r.body), "Agent token Log in") {
			t.Fatalf("login form:\n%s", text(r.body))
		}
		// A wrong token is refused, and sets nothing.
		r = form(h, "/ui/login", remote, url.Values{"token": {"tok-x"}, "next": {"/ui/a/ag1/"}})
		if r.status != http.StatusUnauthorized || !strings.Contains(text(r.body), "not any agent's token") || len(r.header.Values("Set-Cookie")) != 0 {
			t.Fatalf("wrong token: %d %v %s", r.status, r.header.Values("Set-Cookie"), text(r.body))
		}
		// A wrong cookie is refused too.
		r = page(h, "/ui/a/ag1/", remote, &http.Cookie{Name: "cairn_console", Value: "tok-x"})
		if r.status != http.StatusUnauthorized || !strings.Contains(text(r.body), "not any agent's token") {
			t.Fatalf("wrong cookie: %d %s", r.status, text(r.body))
		}
		// The right token logs in, to where the person was going.
		r = form(h, "/ui/login", remote, url.Values{"token": {"tok-1"}, "next": {"/ui/a/ag1/w/wb1/"}})
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/a/ag1/w/wb1/" {
			t.Fatalf("login: %d %q", r.status, r.header.Get("Location"))
		}
		ck := (&http.Response{Header: r.header}).Cookies()
		if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != "/ui/" {
			t.Fatalf("login cookie: %+v", ck)
		}
		if r := page(h, "/ui/a/ag1/w/wb1/", remote, ck[0]); r.status != http.StatusOK || !strings.Contains(text(r.body), "Workbench wb1") {
			t.Fatalf("logged in: %d %s", r.status, text(r.body))
		}
		if r := page(h, "/ui/", remote, ck[0]); !strings.Contains(text(r.body), "Agents ag1") || strings.Contains(text(r.body), "ag2") {
			t.Errorf("home lists another agent's name:\n%s", text(r.body))
		}
		// Another agent's pages are not this login's.
		if r := page(h, "/ui/a/ag2/", remote, ck[0]); r.status != http.StatusNotFound {
			t.Errorf("another agent: %d", r.status)
		}
		// A redirect after login stays in the console.
		r = form(h, "/ui/login", remote, url.Values{"token": {"tok-1"}, "next": {"//evil.example/"}})
		if r.header.Get("Location") != "/ui/" {
			t.Errorf("login sent to %q", r.header.Get("Location"))
		}
		// A form of another site may not post.
		req := httptest.NewRequest(http.MethodPost, "/ui/a/ag1/pins/x/verify", nil)
		req.RemoteAddr = remote
		req.Header.Set("Origin", "http://evil.example")
		req.AddCookie(ck[0])
		if r := do(h, req); r.status != http.StatusForbidden {
			t.Errorf("a cross-site post: %d", r.status)
		}
	})
}

func TestConsoleWritesNeedTheFlag(t *testing.T) {
	for _, writes := range []bool{false, true} {
		h := newServer(t, mem.NewBucket(), serve.Options{ConsoleWrites: writes}).Handler()
		seedConsole(t, h, "ag1")
		wb := text(page(h, "/ui/a/ag1/w/wb1/", loopback).body)
		id := regexp.MustCompile(`(\d+) nightly`).FindStringSubmatch(wb)
		if id == nil {
			t.Fatalf("no snapshot on the page:\n%s", wb)
		}
		if strings.Contains(wb, "Retire") != writes {
			t.Errorf("writes %v: a Retire button: %v", writes, !writes)
		}
		r := form(h, "/ui/a/ag1/w/wb1/snapshots/"+id[1]+"/retire", loopback, nil)
		after := text(page(h, "/ui/a/ag1/w/wb1/", loopback).body)
		if writes {
			if r.status != http.StatusSeeOther || !regexp.MustCompile(`nightly \d+ retired`).MatchString(after) {
				t.Errorf("retire with writes: %d\n%s", r.status, after)
			}
			r = form(h, "/ui/a/ag1/pins", loopback, url.Values{"note": {"before the upgrade"}})
			if r.status != http.StatusOK || !strings.Contains(text(r.body), "created") || !strings.Contains(text(r.body), "before the upgrade") {
				t.Errorf("pin with writes: %d %s", r.status, text(r.body))
			}
			// Any pin verifies on demand.
			name := regexp.MustCompile(`action="/ui/a/ag1/pins/([^/]+)/verify"`).FindSubmatch(r.body)
			if name == nil {
				t.Fatalf("no verify form:\n%s", r.body)
			}
			r = form(h, "/ui/a/ag1/pins/"+string(name[1])+"/verify", loopback, nil)
			if !regexp.MustCompile(`Pin \S+ verifies: [1-9]\d* objects`).MatchString(text(r.body)) {
				t.Errorf("verify: %d %s", r.status, text(r.body))
			}
		} else {
			if r.status != http.StatusForbidden || strings.Contains(after, "retired") {
				t.Errorf("retire without writes: %d\n%s", r.status, after)
			}
			if r := form(h, "/ui/a/ag1/pins", loopback, nil); r.status != http.StatusForbidden {
				t.Errorf("pin without writes: %d", r.status)
			}
		}
	}
}

// TestConsoleTail follows the live tail's stream: the backlog first,
// then a put made after the stream began.
func TestConsoleTail(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	h := s.Handler()
	post(t, h, "ag1", "workbench_create", `{"id":"wb1"}`)
	post(t, h, "ag1", "workbench_put_file", `{"id":"wb1","section":"outputs","path":"early.txt","text":"x"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ui/a/ag1/events?wb=wb1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var kind string
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "event: "); ok {
				kind = k
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				events <- kind + " " + d
			}
		}
		close(events)
	}()
	next := func() string {
		select {
		case ev := <-events:
			return ev
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return ""
	}
	for ev := next(); !strings.Contains(ev, "early.txt"); ev = next() {
		if !strings.HasPrefix(ev, "backlog ") {
			t.Fatalf("before the backlog's put: %s", ev)
		}
	}
	put := time.Now()
	post(t, h, "ag1", "workbench_put_file", `{"id":"wb1","section":"outputs","path":"late.txt","text":"y"}`)
	ev := next()
	if !strings.HasPrefix(ev, "change ") || !strings.Contains(ev, `"path":"outputs/late.txt"`) || !strings.Contains(ev, `"kind":"PathCreated"`) {
		t.Fatalf("after the put: %s", ev)
	}
	t.Logf("the put reached the tail %v after it was acknowledged", time.Since(put).Round(time.Millisecond))
}

// TestConsoleTailEndsAtShutdown: an open tail ends when shutdown begins,
// rather than holding it for the rest of the stream's life, and no new
// one starts.
func TestConsoleTailEndsAtShutdown(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	post(t, s.Handler(), "ag1", "workbench_create", `{"id":"wb1"}`)
	resp, err := http.Get(srv.URL + "/ui/a/ag1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	s.EndStreams()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the stream broke rather than ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the start of shutdown")
	}
	again, err := http.Get(srv.URL + "/ui/a/ag1/events")
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream opened after: %s", again.Status)
	}
}

// TestConsoleTailsAreBounded: past 64 open tails a server refuses another
// (each polls the bucket), and takes one again once one has closed.
func TestConsoleTailsAreBounded(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	post(t, s.Handler(), "ag1", "workbench_create", `{"id":"wb1"}`)
	open := func() *http.Response {
		t.Helper()
		resp, err := http.Get(srv.URL + "/ui/a/ag1/events")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var tails []*http.Response
	for range 64 {
		r := open()
		if r.StatusCode != http.StatusOK {
			t.Fatalf("tail %d: %s", len(tails)+1, r.Status)
		}
		tails = append(tails, r)
	}
	r := open()
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the 65th tail: %s", r.Status)
	}
	tails[0].Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := open()
		if r.StatusCode == http.StatusOK {
			tails[0] = r
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("no tail opened after one closed")
		}
	}
	for _, r := range tails {
		r.Body.Close()
	}
}

// TestConsoleOddNames: names with spaces, '#', '?', '%' and letters
// outside ASCII make links that lead back to them.
func TestConsoleOddNames(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	if r := post(t, h, "ag1", "workbench_put_file", `{"id":"wb1","section":"outputs","path":"we ird#?%/名前 file.txt","text":"odd name\n"}`); r.status != http.StatusOK {
		t.Fatalf("put: %s", r.body)
	}
	follow := func(path, want string) string {
		t.Helper()
		r := page(h, path, loopback)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, r.status, text(r.body))
		}
		m := regexp.MustCompile(`href="([^"]*)">` + regexp.QuoteMeta(want)).FindSubmatch(r.body)
		if m == nil {
			t.Fatalf("%s has no link to %q:\n%s", path, want, r.body)
		}
		return string(m[1])
	}
	dir := follow("/ui/a/ag1/w/wb1/ls/outputs/", "we ird#?%/")
	file := follow(dir, "名前 file.txt")
	r := page(h, file, loopback)
	if got := text(r.body); r.status != http.StatusOK || !strings.Contains(got, "名前 file.txt") || !strings.Contains(got, "1 odd name") {
		t.Fatalf("%s: %d %s", file, r.status, got)
	}
	raw := follow(file, "Download")
	if r := page(h, raw, loopback); string(r.body) != "odd name" { // do trims the last newline
		t.Errorf("download: %q", r.body)
	}
}

// TestNoConsole: a server without the console has no /ui/ routes.
func TestNoConsole(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{NoConsole: true}).Handler()
	for _, p := range []string{"/ui/", "/ui/login", "/ui/static/console.js", "/ui/a/ag1/"} {
		if r := page(h, p, loopback); r.status != http.StatusNotFound || code(t, r.body) != serve.CodeRouteNotFound {
			t.Errorf("%s: %d %s", p, r.status, r.body)
		}
	}
}

// TestConsoleCommitHistory walks from the workbench's last commit to its
// parent, whose page shows what the parent sealed.
func TestConsoleCommitHistory(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	digest := `"content_digest_uri":"sha256:` + strings.Repeat("cd", 32) + `"`
	for _, call := range []struct{ tool, body string }{
		{"workbench_create", `{"id":"wb1"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"a.txt","text":"first"}`},
		{"workbench_commit", `{"id":"wb1","manifest":{"run":1},` + digest + `}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"a.txt","text":"second, longer","replace":true}`},
		{"workbench_commit", `{"id":"wb1","manifest":{"run":2},` + digest + `,"replace":true}`},
	} {
		if r := post(t, h, "ag1", call.tool, call.body); r.status != http.StatusOK {
			t.Fatalf("%s: %s", call.tool, r.body)
		}
	}
	wb := page(h, "/ui/a/ag1/w/wb1/", loopback)
	parent := regexp.MustCompile(`<a href="(/ui/a/ag1/w/wb1/commit\?c=[0-9a-f]{64})">`).FindSubmatch(wb.body)
	if parent == nil {
		t.Fatalf("the workbench page links no parent:\n%s", wb.body)
	}
	last := text(page(h, "/ui/a/ag1/w/wb1/commit", loopback).body)
	first := text(page(h, string(parent[1]), loopback).body)
	if !strings.Contains(last, "outputs/a.txt 2 14 B") || !strings.Contains(first, "outputs/a.txt 1 5 B") || !strings.Contains(first, "parents none") || strings.Contains(first, "(the last)") {
		t.Errorf("last commit:\n%s\nits parent:\n%s", last, first)
	}
	if r := page(h, "/ui/a/ag1/w/wb1/commit?c=nothex", loopback); r.status != http.StatusBadRequest {
		t.Errorf("a malformed commit id: %d", r.status)
	}
}

// headReads counts the reads of heads (Get and Stat of a key ending in
// "/head") that pass through it.
type headReads struct {
	bucket.Bucket
	n atomic.Int64
}

func (b *headReads) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	if strings.HasSuffix(key, "/head") {
		b.n.Add(1)
	}
	return b.Bucket.Get(ctx, key)
}

func (b *headReads) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	if strings.HasSuffix(key, "/head") {
		b.n.Add(1)
	}
	return b.Bucket.Stat(ctx, key)
}

// TestConsolePageReadsTheHeadOnce: every part of a page reads one pinned
// head, read once, however many tool reads the page makes (the file page
// makes a dozen: the body, the snapshots, the file in each, the feed's
// windows).
func TestConsolePageReadsTheHeadOnce(t *testing.T) {
	b := &headReads{Bucket: mem.NewBucket()}
	h := newServer(t, b, serve.Options{}).Handler()
	seedConsole(t, h, "ag1")
	post(t, h, "ag1", "workbench_snapshot", `{"id":"wb1","name":"second"}`)
	for _, p := range []string{
		"/ui/a/ag1/",
		"/ui/a/ag1/w/wb1/",
		"/ui/a/ag1/w/wb1/ls/outputs/",
		"/ui/a/ag1/w/wb1/f/outputs/result.json",
		"/ui/a/ag1/w/wb1/commit",
		"/ui/a/ag1/w/wb1/raw/outputs/result.json",
	} {
		before := b.n.Load()
		if r := page(h, p, loopback); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, r.status, text(r.body))
		}
		if n := b.n.Load() - before; n != 1 {
			t.Errorf("%s read the head %d times", p, n)
		}
	}
}
