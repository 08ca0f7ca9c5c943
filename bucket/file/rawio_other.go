//go:build !linux

package file

import (
	"io"
	"os"
	"time"
)

// The object files' reads, writes and syncs, through os.File (on Linux,
// rawio_linux.go makes the system calls itself).

type fileInfo struct {
	size    int64
	mod     time.Time
	regular bool
}

func (fi fileInfo) ModTime() time.Time { return fi.mod }

func infoOf(f *os.File) (fileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return fileInfo{}, err
	}
	return fileInfo{size: st.Size(), mod: st.ModTime(), regular: st.Mode().IsRegular()}, nil
}

func readFile(path string, max int64) ([]byte, fileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileInfo{}, err
	}
	defer f.Close()
	fi, err := infoOf(f)
	if err != nil {
		return nil, fileInfo{}, err
	}
	if !fi.regular {
		return nil, fi, errNotRegular(path)
	}
	n := fi.size
	if max >= 0 && n > max {
		n = max
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fileInfo{}, err
	}
	return buf, fi, nil
}

func createFile(path string, hdr, body []byte, sync bool) (time.Time, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return time.Time{}, err
	}
	fi, err := writeNew(f, hdr, body, sync)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fi.mod, err
}

func writeNew(f *os.File, hdr, body []byte, sync bool) (fileInfo, error) {
	if _, err := f.Write(hdr); err != nil {
		return fileInfo{}, err
	}
	if _, err := f.Write(body); err != nil {
		return fileInfo{}, err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fileInfo{}, err
		}
	}
	return infoOf(f)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
