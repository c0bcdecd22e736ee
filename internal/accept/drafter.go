package accept

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DrafterID identifies a drafter by its files: a hash of every file under
// dir (weights, config, and all), each by its path below dir and its
// content, so a retrained drafter is another drafter and a copy elsewhere
// is the same one. A link to a file counts as the file, as in a Hugging
// Face cache's snapshot, whose files link to its blobs.
func DrafterID(dir string) (string, error) {
	h := sha256.New()
	files := 0
	// WalkDir visits in lexical order, so the hash is the files'.
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			info, err := os.Stat(path)
			if err != nil || !info.Mode().IsRegular() {
				return err
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		files++
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), info.Size())
		_, err = io.Copy(h, f)
		return err
	})
	if err == nil && files == 0 {
		err = errors.New("no files")
	}
	if err != nil {
		return "", fmt.Errorf("drafter %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
