package api

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// StaticOptions configure the static single-page app: GTC_FRONTEND_DIR,
// GTC_FRONTEND_INDEX and GTC_FRONTEND_CACHE_SECONDS. An empty Dir serves nothing.
type StaticOptions struct {
	Dir          string // the built SPA; empty: no static files
	Index        string // the index file, relative to Dir; empty means index.html
	CacheSeconds int    // max-age of files other than the index; below 0 counts as 0
}

func (o StaticOptions) index() string {
	if o.Index == "" {
		return "index.html"
	}
	return o.Index
}

// ValidateStatic is the startup check of the static app settings: with Dir
// set, Dir must be a directory that holds the index file as a regular file. The index is
// looked up through os.Root, so an index name that leaves the directory fails too.
func ValidateStatic(o StaticOptions) error {
	if o.Dir == "" {
		return nil
	}
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return fmt.Errorf("GTC_FRONTEND_DIR=%s: %w", o.Dir, unwrapPathError(err))
	}
	defer root.Close()
	idx := o.index()
	fi, err := root.Stat(idx)
	if err != nil {
		return fmt.Errorf("GTC_FRONTEND_DIR=%s does not contain GTC_FRONTEND_INDEX=%s: %w", o.Dir, idx, unwrapPathError(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("GTC_FRONTEND_DIR=%s: GTC_FRONTEND_INDEX=%s is not a regular file", o.Dir, idx)
	}
	return nil
}

// unwrapPathError drops the *fs.PathError wrapper, whose text repeats the path the caller
// already names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// EnableStatic makes the server also serve the SPA of o. It runs the startup
// check and returns its error; with an empty Dir it does nothing. Call it once, after New
// and before the server handles requests.
//
// The static handler runs as the last middleware, after identity and the route guard, so
// the API's error precedence holds: identity (401/403) first, then a path that matched a
// route (or a known path with another method, 405) is never served from the directory.
// It is deliberately not echo's RouteNotFound("/*") handler: a catch-all not-found route
// is also taken for known paths with an unknown method, which would turn every 405 into
// the SPA.
func (s *Server) EnableStatic(o StaticOptions) error {
	if o.Dir == "" {
		return nil
	}
	if err := ValidateStatic(o); err != nil {
		return err
	}
	s.e.Use(s.static(o))
	s.page.spa = true
	return nil
}

// static serves GET and HEAD requests that matched no route and lie outside the reserved
// set: a regular file of the directory, else the index for a path whose last segment has
// no ".", else 404 ROUTE_NOT_FOUND.
func (s *Server) static(o StaticOptions) echo.MiddlewareFunc {
	site := &staticSite{
		dir:      o.Dir,
		index:    path.Clean(strings.TrimPrefix(o.index(), "/")),
		maxAge:   "public, max-age=" + strconv.Itoa(max(o.CacheSeconds, 0)),
		reserved: []string{s.opts.Prefix, "/healthz", "/readyz", "/mcp", "/docs", "/swagger"},
		log:      s.log,
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			m := c.Request().Method
			// A matched route has a path; so has a known path with another method, which
			// the route guard has answered with 405 before this runs.
			if c.Path() != "" || (m != http.MethodGet && m != http.MethodHead) {
				return next(c)
			}
			return site.serve(c)
		}
	}
}

type staticSite struct {
	dir      string
	index    string // cleaned, relative to dir
	maxAge   string
	reserved []string
	log      *slog.Logger
}

// routeNotFound is the 404 of an unknown path, the same body echo's own
// not-found answer gets from the error handler.
func routeNotFound() error {
	return &gtc.Error{Code: gtc.CodeRouteNotFound, Message: "Not Found"}
}

func (st *staticSite) serve(c echo.Context) error {
	p := c.Request().URL.Path // decoded once, so %2e%2e is .. here
	rel, ok := cleanStaticPath(p)
	if !ok || st.isReserved(p) || st.isReserved("/"+rel) {
		return routeNotFound()
	}
	root, err := os.OpenRoot(st.dir)
	if err != nil {
		return fmt.Errorf("open the frontend directory: %w", err)
	}
	defer root.Close()
	if rel != "" {
		// Stat before Open, so that a FIFO or device file is never opened. os.Root refuses
		// names and symbolic links that leave the directory; those count as not found.
		if fi, err := root.Stat(rel); err == nil && fi.Mode().IsRegular() {
			if rel == st.index {
				return st.sendIndex(c, root)
			}
			return st.send(c, root, rel, contentType(rel), st.maxAge)
		}
	}
	if strings.Contains(path.Base("/"+rel), ".") {
		// It looks like a missing asset; the index would only break the page that asked.
		return routeNotFound()
	}
	return st.sendIndex(c, root)
}

// sendIndex answers with the index file, which must never be cached: it names the hashed
// assets of the current build.
func (st *staticSite) sendIndex(c echo.Context, root *os.Root) error {
	return st.send(c, root, st.index, "text/html; charset=utf-8", "no-cache")
}

func (st *staticSite) send(c echo.Context, root *os.Root, name, ctype, cache string) error {
	f, err := root.Open(name)
	if err != nil {
		if name != st.index && errors.Is(err, fs.ErrNotExist) {
			return routeNotFound()
		}
		return fmt.Errorf("open frontend file %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat frontend file %s: %w", name, err)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, ctype)
	h.Set("Cache-Control", cache)
	h.Set(echo.HeaderContentLength, strconv.FormatInt(fi.Size(), 10))
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err = io.CopyN(c.Response(), f, fi.Size())
	if err != nil {
		// The status is sent; all that is left is to log the short body.
		st.log.WarnContext(c.Request().Context(), "frontend file cut short", "request_id", requestID(c), "file", name, "err", err)
	}
	return nil
}

// cleanStaticPath turns a URL path into a name relative to the directory ("" for the
// directory itself). ok is false when a ".." would climb above the directory.
func cleanStaticPath(p string) (rel string, ok bool) {
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return "", false
			}
		default:
			depth++
		}
	}
	rel = strings.TrimPrefix(path.Clean("/"+p), "/")
	return rel, true
}

// isReserved reports whether p is one of the reserved paths (the API prefix, probes, /mcp,
// /docs, /swagger) or below one.
func (st *staticSite) isReserved(p string) bool {
	for _, r := range st.reserved {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// staticTypes fixes the Content-Type of the usual files of a built SPA, so that the answer
// does not depend on the host's mime.types (with nosniff a wrong script type stops the
// app). Other extensions go to the mime package.
var staticTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".htm":         "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".txt":         "text/plain; charset=utf-8",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".jpg":         "image/jpeg",
	".jpeg":        "image/jpeg",
	".gif":         "image/gif",
	".webp":        "image/webp",
	".avif":        "image/avif",
	".ico":         "image/x-icon",
	".woff":        "font/woff",
	".woff2":       "font/woff2",
	".ttf":         "font/ttf",
	".otf":         "font/otf",
	".wasm":        "application/wasm",
	".pdf":         "application/pdf",
	".xml":         "text/xml; charset=utf-8",
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := staticTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}
