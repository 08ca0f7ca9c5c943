package serve

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// maxRequestID is the longest X-Request-Id echoed; a longer one, or one
// with anything but printable ASCII, is replaced by a fresh id.
const maxRequestID = 128

// requestID returns the request's X-Request-Id when it is usable, else a
// fresh random one.
func requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id != "" && len(id) <= maxRequestID {
		usable := true
		for i := 0; i < len(id); i++ {
			if id[i] <= 0x20 || id[i] > 0x7e {
				usable = false
				break
			}
		}
		if usable {
			return id
		}
	}
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recorder remembers the status and size of a response, and what the
// handler learnt about the request for the log line and the metrics.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	agent  string
	tool   string
}

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush lets a streaming handler (the MCP transport) flush through the
// recorder.
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe wraps the whole server: it sets X-Request-Id, and after the
// request logs one line and records the metrics. It logs neither bodies
// nor headers, so no token reaches the log.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r)
		w.Header().Set("X-Request-Id", id)
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		d := time.Since(start)
		s.metrics.request(rec.tool, rec.status, d)
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("request_id", id),
			slog.String("method", r.Method),
			slog.String("route", route(r)),
			slog.String("agent", rec.agent),
			slog.String("tool", rec.tool),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		)
	})
}

// route is the pattern that served r, or the path when none did.
func route(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return "unmatched"
}
