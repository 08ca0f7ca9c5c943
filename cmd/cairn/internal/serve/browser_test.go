package serve_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/workbench"
)

// The browser tests drive the console in headless Chromium (Debian's
// chromium package; CAIRN_CHROMIUM names another binary) and assert what
// a person would read on the page. Without Chromium they are skipped,
// unless CAIRN_REQUIRE_SERVERS is set (the README's test command sets it
// and installs Chromium), where they fail.
//
// CAIRN_CONSOLE_SCREENSHOTS=dir keeps a screenshot of each step there
// (docs/console.md shows them).

// chromium returns the browser's path.
func chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CAIRN_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CAIRN_REQUIRE_SERVERS") != "" {
		t.Fatal("Chromium is not installed (apt-get install chromium), and CAIRN_REQUIRE_SERVERS is set")
	}
	t.Skip("Chromium is not installed; set CAIRN_CHROMIUM or install Debian's chromium")
	return ""
}

// browser starts a headless Chromium for the test and returns a context
// of its first tab.
func browser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	// Start the browser now (a first action must not have a deadline:
	// it would end the browser with it).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// shot keeps a screenshot of the tab's window as name.png when
// CAIRN_CONSOLE_SCREENSHOTS names a directory.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("CAIRN_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()) // the window, as PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedFiles creates workbench wb and puts n small files into its
// outputs/{dir}/ (part-00000.txt, …) through the Go API, many at once, as
// agents writing side by side would.
func seedFiles(t testing.TB, svc *workbench.Service, wb, dir string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := svc.Create(ctx, workbench.CreateInput{ID: wb}); err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range n {
		g.Go(func() error {
			text := fmt.Sprintf("row %d\n", i)
			_, err := svc.PutFile(gctx, workbench.PutFileInput{ID: wb, Section: "outputs", Path: fmt.Sprintf("%s/part-%05d.txt", dir, i), Text: &text})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// visible waits for text on the page and returns the page's text, its
// spaces folded.
func visible(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		// A page being replaced by the next one may not answer: ask again.
		body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		body = strings.Join(strings.Fields(body), " ") // table cells are tab-separated
		if err == nil && strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("read the page: %v", err)
			}
			url, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%s does not show %q:\n%s", url, want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	files := 10000
	b := mem.NewBucket()
	const token = "console-secret"
	s := newServer(t, b, serve.Options{Tokens: map[string]string{"ag1": token}})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	// The browser ends first (cleanups run last to first): its open
	// streams would hold the server's Close.
	ctx := browser(t)

	// The workbench: 10,000 files, a report replaced once, a commit and
	// a snapshot, written by another replica of the bucket.
	svc, err := workbench.Open(context.Background(), b, workbench.Options{AgentID: "ag1"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	started := time.Now()
	seedFiles(t, svc, "wb1", "data", files)
	t.Logf("seeded %d files in %v", files, time.Since(started).Round(time.Millisecond))
	bg := context.Background()
	for i, text := range []string{"# Findings\n\nA first draft.\n", "# Quarterly findings\n\nThe **second** run beat the first.\n\n- fewer retries\n- smaller heads\n"} {
		if _, err := svc.PutFile(bg, workbench.PutFileInput{ID: "wb1", Section: "outputs", Path: "report.md", Text: &text, Replace: i > 0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Commit(bg, workbench.CommitInput{ID: "wb1", Manifest: map[string]any{"task": "weekly report"}, ContentDigestURI: "sha256:" + strings.Repeat("0f", 32)}); err != nil {
		t.Fatal(err)
	}
	name := "nightly"
	if _, err := svc.Snapshot(bg, workbench.SnapshotInput{ID: "wb1", Name: &name}); err != nil {
		t.Fatal(err)
	}

	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	textOf := func(css string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// No token: the login form.
	run(chromedp.Navigate(srv.URL + "/ui/a/ag1/"))
	visible(t, ctx, "Agent token")
	shot(t, ctx, "login")

	// A wrong token is refused.
	run(chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Submit(chromedp.CSS("#token")))
	visible(t, ctx, "That token is not any agent's token here")

	// The right one opens the agent's page, then a click at a time: the
	// workbench, its outputs, the report.
	run(chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")))
	visible(t, ctx, "Agent ag1")
	shot(t, ctx, "agent")
	run(chromedp.Click(chromedp.Search(`//a[text()="wb1"]`)))
	page := visible(t, ctx, "Workbench wb1")
	for _, want := range []string{"nightly", "weekly report", "Run manifest", fmt.Sprint(files+2) + " files"} {
		if !strings.Contains(page, want) {
			t.Errorf("the workbench page does not show %q:\n%s", want, page)
		}
	}
	shot(t, ctx, "workbench")
	run(chromedp.Click(chromedp.Search(`//ul[@class="sections"]//a[text()="outputs"]`)))
	visible(t, ctx, "report.md")
	run(chromedp.Click(chromedp.Search(`//a[text()="data/"]`)))
	page = visible(t, ctx, "part-00099.txt")
	if strings.Contains(page, "part-00100.txt") || !strings.Contains(page, "Next page") {
		t.Errorf("the first page of data/ is not the first 100 files:\n%s", page)
	}
	run(chromedp.Click(chromedp.Search(`//a[@rel="next"]`)))
	page = visible(t, ctx, "part-00199.txt")
	if strings.Contains(page, "part-00099.txt") {
		t.Errorf("the second page of data/ repeats the first:\n%s", page)
	}
	shot(t, ctx, "directory")
	run(chromedp.Click(chromedp.Search(`//nav[@class="crumbs"]//a[text()="outputs"]`)))
	run(chromedp.Click(chromedp.Search(`//a[text()="report.md"]`)))
	page = visible(t, ctx, "Quarterly findings")
	for _, want := range []string{"The second run beat the first.", "fewer retries", "generation 2", "PathReplaced", "PathCreated", "nightly"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report's page does not show %q:\n%s", want, page)
		}
	}
	if strong := textOf("article.markdown strong"); strong != "second" {
		t.Errorf("the Markdown's bold text is %q", strong)
	}
	shot(t, ctx, "file")

	// JSON, pretty-printed with its line numbers.
	run(chromedp.Navigate(srv.URL + "/ui/a/ag1/w/wb1/f/metadata/run_manifest.json"))
	page = visible(t, ctx, `"task": "weekly report"`)
	if !strings.Contains(page, `1 { 2 "commit_identity":`) {
		t.Errorf("the run manifest is not numbered by line:\n%s", page)
	}
	shot(t, ctx, "json")

	// The live tail: a put through the API shows on the open page.
	run(chromedp.Click(chromedp.Search(`//nav[@class="crumbs"]//a[text()="wb1"]`)))
	visible(t, ctx, "Workbench wb1")
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		status := textOf("#tail-status")
		if status == "live" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tail is %q", status)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/agents/ag1/tools/workbench_put_file",
		strings.NewReader(`{"id":"wb1","section":"logs","path":"live.log","text":"the agent is still writing\n"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("put through the API: %s", resp.Status)
	}
	acked := time.Now()
	for {
		rows := textOf("#tail-rows")
		if strings.Contains(rows, "logs/live.log") {
			break
		}
		if time.Since(acked) > tailBound {
			t.Fatalf("the tail did not show the put within %v:\n%s", tailBound, rows)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the tail showed the put %v after the API acknowledged it", time.Since(acked).Round(time.Millisecond))
	// The chart of writes per minute has the put's bar.
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#tail-chart rect")].filter(r => +r.getAttribute("height") > 0).length`))
	if err != nil || bars != 1 {
		t.Errorf("the chart has %d bars (%v), want the put's minute", bars, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("tail").scrollIntoView(true), true`)); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, "tail")
}
