package fakegcs

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestUTCLastModified: the fake writes local wall-clock time labelled GMT;
// the wrapper turns it into UTC.
func TestUTCLastModified(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("UTC+5:30", 5*3600+1800)
	defer func() { time.Local = saved }()

	h := utcLastModified(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Last-Modified", "Mon, 30 Nov 2026 10:00:00 GMT") // 10:00 local
		w.Write([]byte("body"))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got, want := rec.Header().Get("Last-Modified"), "Mon, 30 Nov 2026 04:30:00 GMT"; got != want {
		t.Fatalf("Last-Modified %q, want %q", got, want)
	}
	if rec.Body.String() != "body" {
		t.Fatalf("body %q", rec.Body.String())
	}
}
