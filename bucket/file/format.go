package file

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/crc32"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/wire"
)

// An object file is a header followed by the body:
//
//	offset size
//	0      8    magic "cairnobj"
//	8      1    format version (1)
//	9      3    zero
//	12     16   version token
//	28     8    body length, big-endian
//	36     4    CRC-32C (Castagnoli) of the body, big-endian
//	40     4    CRC-32C of bytes 0..40, big-endian
const (
	headerLen     = 44
	formatVersion = 1
	magic         = "cairnobj"
	tokenLen      = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded header of an object file.
type header struct {
	token [tokenLen]byte
	size  int64
	crc   uint32
}

func newToken() [tokenLen]byte {
	var t [tokenLen]byte
	rand.Read(t[:]) // never fails
	return t
}

func (h header) version() bucket.Version { return bucket.Version(hex.EncodeToString(h.token[:])) }

func (h header) checksum() string { return fmt.Sprintf("crc32c:%08x", h.crc) }

// encode returns the header for body under token.
func encode(token [tokenLen]byte, body []byte) (header, []byte) {
	h := header{token: token, size: int64(len(body)), crc: crc32.Checksum(body, castagnoli)}
	w := wire.NewWriter(make([]byte, 0, headerLen)).
		Raw([]byte(magic)).U8(formatVersion).Raw(make([]byte, 3)).
		Raw(h.token[:]).U64(uint64(h.size)).U32(h.crc)
	w.U32(crc32.Checksum(w.Bytes(), castagnoli))
	return h, w.Bytes()
}

// decode parses a header and checks it against the object file's size.
// Damage is reported as bucket.ErrIntegrity.
func decode(b []byte, fileSize int64) (header, error) {
	if len(b) < headerLen || fileSize < headerLen {
		return header{}, fmt.Errorf("%w: object file of %d bytes is shorter than its header", bucket.ErrIntegrity, fileSize)
	}
	var h header
	r := wire.NewReader(b[:headerLen])
	m, version := r.Take(len(magic)), r.U8()
	r.Take(3)
	r.Copy(h.token[:])
	h.size, h.crc = int64(r.U64()), r.U32()
	sum := r.U32()
	if err := r.End(); err != nil {
		return header{}, fmt.Errorf("%w: %w", bucket.ErrIntegrity, err) // cannot happen: the length is checked above
	}
	if got := crc32.Checksum(b[:headerLen-4], castagnoli); got != sum {
		return header{}, fmt.Errorf("%w: header checksum %08x, want %08x", bucket.ErrIntegrity, got, sum)
	}
	if string(m) != magic {
		return header{}, fmt.Errorf("%w: not an object file (magic %q)", bucket.ErrIntegrity, m)
	}
	if version != formatVersion {
		return header{}, fmt.Errorf("object file format %d, this build reads %d", version, formatVersion)
	}
	if h.size < 0 || h.size != fileSize-headerLen {
		return header{}, fmt.Errorf("%w: body of %d bytes, header says %d", bucket.ErrIntegrity, fileSize-headerLen, h.size)
	}
	return h, nil
}
