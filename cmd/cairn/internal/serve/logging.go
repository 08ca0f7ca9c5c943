package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/workbench"
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
	// code and message are the error envelope's, when the answer is one.
	code, message string
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

// observe wraps the whole server: it sets X-Request-Id and the answer's
// write deadline, and after the request logs one line and records the
// metrics. It logs neither bodies nor headers, so no token reaches the
// log. The line's level says who should look: probes and metrics scrapes
// are debug, answers up to 4xx info, a 5xx warn (error for Internal),
// with the error's code and message (the cause chain) and the request id.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r)
		w.Header().Set("X-Request-Id", id)
		http.NewResponseController(w).SetWriteDeadline(s.writeDeadline(start))
		rec := &recorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), recorderKey{}, rec))
		next.ServeHTTP(rec, r) // the mux sets r.Pattern, which route reads
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		d := time.Since(start)
		s.metrics.request(rec.tool, rec.status, d)
		attrs := []slog.Attr{
			slog.String("request_id", id),
			slog.String("method", r.Method),
			slog.String("route", route(r)),
			slog.String("agent", rec.agent),
			slog.String("tool", rec.tool),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		}
		if rec.code != "" {
			attrs = append(attrs, slog.String("code", rec.code), slog.String("error", rec.message))
		}
		s.log.LogAttrs(r.Context(), logLevel(r, rec), "request", attrs...)
	})
}

// recorderKey carries a request's recorder in its context, so that a
// handler deeper down (an MCP tool call) can say which tool it ran.
type recorderKey struct{}

// noteTool records the tool a request ran, for its log line and metrics.
func noteTool(ctx context.Context, tool string) {
	if rec, ok := ctx.Value(recorderKey{}).(*recorder); ok {
		rec.tool = tool
	}
}

// logLevel is the level of a request's log line.
func logLevel(r *http.Request, rec *recorder) slog.Level {
	switch {
	case rec.code == workbench.CodeInternal || rec.status >= 500 && rec.code == "":
		return slog.LevelError
	case rec.status >= 500:
		return slog.LevelWarn
	case r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics":
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// route is the pattern that served r, or the path when none did.
func route(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return "unmatched"
}
