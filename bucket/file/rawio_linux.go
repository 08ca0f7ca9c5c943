//go:build linux

package file

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The object files' reads, writes and syncs, made with the system calls
// themselves. os.File registers every regular file it opens with the
// runtime's poller, which refuses it, at five extra system calls an open
// (fcntl to set and clear non-blocking mode, epoll_ctl), and a small put
// opens four to eight files (docs/performance.md, "Fewer system calls
// a put").

// fileInfo is what the bucket needs of an open file's status.
type fileInfo struct {
	size    int64
	mod     time.Time
	regular bool
}

func (fi fileInfo) ModTime() time.Time { return fi.mod }

func pathErr(op, path string, err error) error {
	return &os.PathError{Op: op, Path: path, Err: err}
}

// retry repeats a system call interrupted by a signal.
func retry(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

func openFD(path string, flags int, perm uint32) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, flags|unix.O_CLOEXEC, perm)
		return err
	})
	if err != nil {
		return -1, pathErr("open", path, err)
	}
	return fd, nil
}

func fstat(fd int, path string) (fileInfo, error) {
	var st unix.Stat_t
	if err := retry(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return fileInfo{}, pathErr("fstat", path, err)
	}
	return fileInfo{
		size:    st.Size,
		mod:     time.Unix(st.Mtim.Unix()),
		regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
	}, nil
}

// readFull reads len(buf) bytes at offset 0 on.
func readFull(fd int, path string, buf []byte) error {
	for off := 0; off < len(buf); {
		var n int
		err := retry(func() (err error) {
			n, err = unix.Pread(fd, buf[off:], int64(off))
			return err
		})
		if err != nil {
			return pathErr("read", path, err)
		}
		if n == 0 {
			return pathErr("read", path, errShortRead)
		}
		off += n
	}
	return nil
}

func writeAll(fd int, path string, b []byte) error {
	for len(b) > 0 {
		var n int
		err := retry(func() (err error) {
			n, err = unix.Write(fd, b)
			return err
		})
		if err != nil {
			return pathErr("write", path, err)
		}
		b = b[n:]
	}
	return nil
}

// readFile reads the file at path: whole, or its first max bytes if max
// is not negative.
func readFile(path string, max int64) ([]byte, fileInfo, error) {
	fd, err := openFD(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, fileInfo{}, err
	}
	defer unix.Close(fd)
	fi, err := fstat(fd, path)
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
	if err := readFull(fd, path, buf); err != nil {
		return nil, fileInfo{}, err
	}
	return buf, fi, nil
}

// createFile writes header and body to a new file at path, which must
// not exist, syncs it if told to, and returns its modification time.
func createFile(path string, hdr, body []byte, sync bool) (time.Time, error) {
	fd, err := openFD(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		return time.Time{}, err
	}
	fi, err := writeNew(fd, path, hdr, body, sync)
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = pathErr("close", path, cerr)
	}
	return fi.mod, err
}

func writeNew(fd int, path string, hdr, body []byte, sync bool) (fileInfo, error) {
	if len(body) <= smallBody {
		// One write instead of two.
		hdr = append(hdr[:len(hdr):len(hdr)], body...)
		body = nil
	}
	if err := writeAll(fd, path, hdr); err != nil {
		return fileInfo{}, err
	}
	if err := writeAll(fd, path, body); err != nil {
		return fileInfo{}, err
	}
	if sync {
		if err := retry(func() error { return unix.Fsync(fd) }); err != nil {
			return fileInfo{}, pathErr("fsync", path, err)
		}
	}
	return fstat(fd, path)
}

// syncFile fsyncs the file or directory at path.
func syncFile(path string) error {
	fd, err := openFD(path, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = retry(func() error { return unix.Fsync(fd) })
	if err != nil {
		err = pathErr("fsync", path, err)
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = pathErr("close", path, cerr)
	}
	return err
}
