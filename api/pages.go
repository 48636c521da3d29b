package api

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// The pages a person opens in a browser. They are HTML, not API, so the OpenAPI document
// leaves them out; the pages middleware serves them for GET and HEAD, and their entries in
// the permission table give the role they need (HEAD takes GET's).
const (
	// FrontDoorPage is gtc's own home page: what gtc is, live counts, links and how to
	// attach the curator web frontend. With GTC_FRONTEND_DIR set, / is the frontend instead.
	FrontDoorPage = "GET /"
	// DocsPage is the API reference, rendered from the served OpenAPI document.
	DocsPage = "GET /docs"
)

// FrontendBuildCommands are the shell commands that build the curator web frontend from its
// repository and serve it with gtc, as the front door and the README give them.
var FrontendBuildCommands = []string{
	"git clone https://github.com/andrewDoing/GroundTruthCurator.git",
	"cd GroundTruthCurator/frontend",
	"npm ci",
	"npm run build",
	`GTC_FRONTEND_DIR="$PWD/dist" gtc serve`,
}

//go:embed pages/style.css pages/frontdoor.html pages/docs.html
var pageFiles embed.FS

// pageCSS is the one style sheet of the pages, inlined in each; pageCSP allows it by its hash
// and nothing else: no script, image, font, frame, form target or other origin.
var pageCSS, pageCSP = func() (string, string) {
	css, err := pageFiles.ReadFile("pages/style.css")
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(css)
	return string(css), "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

var (
	frontDoorTemplate = template.Must(template.ParseFS(pageFiles, "pages/frontdoor.html"))
	docsTemplate      = template.Must(template.ParseFS(pageFiles, "pages/docs.html"))
)

// pageState is what the pages middleware needs beyond the server's options: whether the
// curator frontend owns /, and the API reference, rendered once.
type pageState struct {
	spa      bool // EnableStatic succeeded: / is the frontend's index
	docsOnce sync.Once
	docs     []byte
	docsErr  error
}

// pages serves the front door and the API reference to GET and HEAD requests that matched
// no route. It runs after identity and the route guard, before the frontend's files; / is
// left to the frontend when one is configured.
func (s *Server) pages(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		m := c.Request().Method
		if c.Path() != "" || (m != http.MethodGet && m != http.MethodHead) {
			return next(c)
		}
		switch c.Request().URL.Path {
		case "/":
			if s.page.spa {
				return next(c)
			}
			if err := requirePage(c, FrontDoorPage); err != nil {
				return err
			}
			return s.serveFrontDoor(c)
		case "/docs":
			if err := requirePage(c, DocsPage); err != nil {
				return err
			}
			return s.serveDocs(c)
		}
		return next(c)
	}
}

// requirePage refuses a caller below the page's role in the permission table.
func requirePage(c echo.Context, name string) error {
	p, ok := permissionOf("route", name)
	if !ok {
		panic("api: page " + name + " has no entry in the permission table (api/permissions.go)")
	}
	return gtc.CallerFrom(c.Request().Context()).Require(p.Role, name)
}

// writePage answers with an HTML page and the headers that confine it.
func writePage(c echo.Context, body []byte, cache string) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/html; charset=utf-8")
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", cache)
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err := c.Response().Write(body)
	return err
}

// frontDoorCounts are the live figures of the front door.
type frontDoorCounts struct {
	Datasets int
	Names    []string // the first maxFrontDoorNames dataset names
	More     int      // datasets beyond Names
	ByStatus []statusCount
	Total    int
}

type statusCount struct {
	Status gtc.Status
	N      int
}

// maxFrontDoorNames caps the dataset names the front door lists.
const maxFrontDoorNames = 20

type frontDoorView struct {
	CSS              template.CSS
	Version          string
	Prefix           string
	Counts           *frontDoorCounts // nil when the store did not answer
	Metrics          bool
	FrontendCommands []string
}

// serveFrontDoor renders the front door with the counts of the dataset list and the stats
// route. A store that does not answer leaves the page up without its counts: the links and
// the instructions are what a person needs then.
func (s *Server) serveFrontDoor(c echo.Context) error {
	ctx := c.Request().Context()
	view := frontDoorView{CSS: template.CSS(pageCSS), Version: s.opts.Version, Prefix: s.opts.Prefix,
		Metrics: s.opts.Metrics != nil, FrontendCommands: FrontendBuildCommands}
	names, err := s.cur.Datasets(ctx)
	var stats map[gtc.Status]int
	if err == nil {
		stats, err = s.cur.Stats(ctx)
	}
	if err != nil {
		s.log.WarnContext(ctx, "front door: counts unavailable", "request_id", requestID(c), "err", err)
	} else {
		n := &frontDoorCounts{Datasets: len(names)}
		for _, st := range gtc.Statuses {
			n.ByStatus = append(n.ByStatus, statusCount{st, stats[st]})
			n.Total += stats[st]
		}
		n.Names = names[:min(len(names), maxFrontDoorNames)]
		n.More = len(names) - len(n.Names)
		view.Counts = n
	}
	var buf bytes.Buffer
	if err := frontDoorTemplate.Execute(&buf, view); err != nil {
		return fmt.Errorf("render the front door: %w", err)
	}
	return writePage(c, buf.Bytes(), "no-store")
}

// serveDocs answers with the API reference, rendered on first use from the served document.
func (s *Server) serveDocs(c echo.Context) error {
	s.page.docsOnce.Do(func() { s.page.docs, s.page.docsErr = s.renderDocs() })
	if s.page.docsErr != nil {
		return fmt.Errorf("render the API reference: %w", s.page.docsErr)
	}
	return writePage(c, s.page.docs, "no-cache")
}
