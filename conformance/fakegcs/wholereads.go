package fakegcs

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// wholeReadAttempts bounds how often wholeReads serves one read again.
const wholeReadAttempts = 8

// wholeReads makes a whole-object read answer one version of the object.
//
// The fake's directory backend takes an object's metadata (generation,
// size, CRC32C) under its lock but opens the content only when the body
// is written, after the lock is released; an overwrite in between sends
// the old version's headers with the new version's bytes. GCS never
// does that. A client sees a short body (and retries by generation,
// which the backend no longer has: 404) or, when the sizes agree, bytes
// that fail their CRC32C. So a media GET without a Range is answered
// into a buffer first and served only when its length and CRC32C match
// its headers; otherwise it is answered again from the start.
func wholeReads(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.Header.Get("Range") != "" || !mediaRead(r) {
			h.ServeHTTP(w, r)
			return
		}
		var rec *recorded
		for range wholeReadAttempts {
			rec = &recorded{header: http.Header{}}
			h.ServeHTTP(rec, r)
			if rec.whole() {
				break
			}
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status())
		w.Write(rec.body.Bytes())
	})
}

// mediaRead reports whether r reads an object's bytes: the JSON API's
// alt=media and /download/ paths, or an XML read (a path outside the
// JSON API's).
func mediaRead(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/download/"):
		return true
	case strings.HasPrefix(p, "/storage/v1/"):
		return r.URL.Query().Get("alt") == "media"
	}
	return !strings.HasPrefix(p, "/upload/") && !strings.HasPrefix(p, "/_internal/")
}

// recorded is a response held in memory.
type recorded struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorded) Header() http.Header { return r.header }

func (r *recorded) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorded) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

func (r *recorded) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// whole reports whether the response is not a 200 of an object, or is one
// whose bytes match its Content-Length and CRC32C.
func (r *recorded) whole() bool {
	if r.status() != http.StatusOK || r.header.Get("Content-Encoding") != "" {
		return true
	}
	if n, err := strconv.Atoi(r.header.Get("Content-Length")); err == nil && n != r.body.Len() {
		return false
	}
	for f := range strings.SplitSeq(r.header.Get("X-Goog-Hash"), ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(f), "crc32c=")
		if !ok {
			continue
		}
		want, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(want) != 4 {
			return true // nothing to compare with
		}
		return binary.BigEndian.Uint32(want) == crc32.Checksum(r.body.Bytes(), castagnoli)
	}
	return true
}
