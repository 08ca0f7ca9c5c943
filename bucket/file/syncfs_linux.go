//go:build linux

package file

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fileSystemSync returns the call that makes durable everything written
// to the file system holding a directory, syncfs(2), or nil where it
// cannot be trusted to report a failed write-back: before Linux 5.8,
// syncfs returned success whatever happened (the bucket then syncs file
// by file).
func fileSystemSync() func(dir string) error {
	if !syncfsReports {
		return nil
	}
	return func(dir string) error {
		fd, err := openFD(dir, unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := retry(func() error { return unix.Syncfs(fd) }); err != nil {
			return pathErr("syncfs", dir, err)
		}
		return nil
	}
}

// syncfsReports is whether this kernel's syncfs reports write-back
// errors (Linux 5.8 and later).
var syncfsReports = func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
}()

// kernelAtLeast reports whether a release string ("6.18.44-fc", "5.4.0")
// is at least major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	leading := func(s string) (int, error) {
		end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			s = s[:end]
		}
		return strconv.Atoi(s)
	}
	ma, err1 := leading(parts[0])
	mi, err2 := leading(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
