package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assetFiles embed.FS

// assets are the console's stylesheet and script, served under names that
// carry a hash of their content (console.3f2a….css): a new build changes
// the name, so browsers may keep each one for a year without asking.
type assets struct {
	byURLName map[string]asset // "console.3f2a….css" -> asset
	urls      map[string]string
}

type asset struct {
	body  []byte
	ctype string
}

func loadAssets() (*assets, error) {
	a := &assets{byURLName: map[string]asset{}, urls: map[string]string{}}
	err := fs.WalkDir(assetFiles, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assetFiles.ReadFile(p)
		if err != nil {
			return err
		}
		name := path.Base(p)
		ext := path.Ext(name)
		sum := sha256.Sum256(body)
		hashed := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:6]) + ext
		a.byURLName[hashed] = asset{body: body, ctype: mime.TypeByExtension(ext)}
		a.urls[name] = Prefix + "assets/" + hashed
		return nil
	})
	return a, err
}

// url is the fingerprinted address of the asset name ("console.css").
func (a *assets) url(name string) string { return a.urls[name] }

func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := a.byURLName[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(f.body)
}
