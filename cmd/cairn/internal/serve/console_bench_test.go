package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/workbench"
)

// consoleDirEntries is the size of the directory the benchmarks list.
const consoleDirEntries = 1000

// directoryServer serves a workbench whose outputs/big/ holds
// consoleDirEntries files, and returns the server and the addresses of
// the listing's first page and of a page in its middle (from a cursor).
func directoryServer(b *testing.B) (srv *httptest.Server, first, middle string) {
	b.Helper()
	bk := mem.NewBucket()
	s := serve.New(bk, serve.Options{})
	b.Cleanup(s.Close)
	srv = httptest.NewServer(s.Handler())
	b.Cleanup(srv.Close)
	ctx := context.Background()
	svc, err := workbench.Open(ctx, bk, workbench.Options{AgentID: "ag1"})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	seedFiles(b, svc, "wb1", "big", consoleDirEntries)
	first = srv.URL + "/ui/a/ag1/w/wb1/ls/outputs/big/"
	// Walk to the fifth page, to measure a page reached by its cursor.
	next := first
	for range 4 {
		body := get(b, next)
		m := regexp.MustCompile(`<a rel="next" href="([^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			b.Fatalf("no next page on %s", next)
		}
		next = srv.URL + strings.ReplaceAll(m[1], "&amp;", "&")
	}
	return srv, first, next
}

func get(b *testing.B, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %v %s", url, err, resp.Status)
	}
	return string(body)
}

// BenchmarkConsoleDirectoryPage is one page (100 entries) of a
// 1,000-entry directory as the server renders and sends it over loopback
// HTTP, warm: the first page, and the fifth, reached by its cursor.
func BenchmarkConsoleDirectoryPage(b *testing.B) {
	_, first, middle := directoryServer(b)
	for _, tc := range []struct{ name, url string }{{"first", first}, {"cursor", middle}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if body := get(b, tc.url); !strings.Contains(body, "part-") {
					b.Fatal("no entries on the page")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}

// BenchmarkConsoleDirectoryInBrowser is the same page as a person sees
// it: headless Chromium loads it (navigation to the load event, the
// page's script and stylesheet included) and the benchmark reads the
// last entry's text off it.
func BenchmarkConsoleDirectoryInBrowser(b *testing.B) {
	_, first, middle := directoryServer(b)
	ctx := browser(b)
	for _, tc := range []struct{ name, url, last string }{{"first", first, "part-00099.txt"}, {"cursor", middle, "part-00499.txt"}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if err := chromedp.Do(ctx, chromedp.Navigate(tc.url)); err != nil {
					b.Fatal(err)
				}
				text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#entries tbody tr:last-child")))
				if err != nil || !strings.Contains(text, tc.last) {
					b.Fatalf("the page's last entry is %q (%v)", text, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
