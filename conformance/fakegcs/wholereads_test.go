package fakegcs

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// torn answers as the directory backend does when an overwrite lands
// between taking an object's metadata and opening its content: the first
// `tears` answers carry the old version's headers and the new bytes.
type torn struct {
	tears, calls int
}

func (t *torn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.calls++
	old, now := "old version", "the new version"
	meta := old
	if t.calls > t.tears {
		meta = now
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum([]byte(meta), castagnoli))
	w.Header().Set("Content-Length", strconv.Itoa(len(meta)))
	w.Header().Set("X-Goog-Hash", "crc32c="+base64.StdEncoding.EncodeToString(sum[:])+",md5=x")
	w.Write([]byte(now))
}

// TestWholeReads: a media read whose bytes do not match its headers is
// answered again; one that matches, a ranged read and a metadata read
// are answered once.
func TestWholeReads(t *testing.T) {
	for _, tc := range []struct {
		name, target, rng string
		tears, calls      int
		body              string
	}{
		{"torn twice", "/storage/v1/b/b/o/h?alt=media", "", 2, 3, "the new version"},
		{"download path", "/download/storage/v1/b/b/o/h?alt=media", "", 1, 2, "the new version"},
		{"XML read", "/b/h", "", 1, 2, "the new version"},
		{"whole at once", "/storage/v1/b/b/o/h?alt=media", "", 0, 1, "the new version"},
		{"ranged", "/storage/v1/b/b/o/h?alt=media", "bytes=0-3", 1, 1, "the new version"},
		{"metadata", "/storage/v1/b/b/o/h", "", 1, 1, "the new version"},
		{"torn for good", "/storage/v1/b/b/o/h?alt=media", "", 100, wholeReadAttempts, "the new version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &torn{tears: tc.tears}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			if tc.rng != "" {
				req.Header.Set("Range", tc.rng)
			}
			wholeReads(inner).ServeHTTP(rec, req)
			if inner.calls != tc.calls {
				t.Errorf("answered %d times, want %d", inner.calls, tc.calls)
			}
			if rec.Code != http.StatusOK || rec.Body.String() != tc.body {
				t.Errorf("%d %q", rec.Code, rec.Body.String())
			}
			if tc.calls > tc.tears && rec.Header().Get("Content-Length") != strconv.Itoa(len(tc.body)) {
				t.Errorf("Content-Length %q", rec.Header().Get("Content-Length"))
			}
		})
	}
}
