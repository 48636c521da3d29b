package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// tagList is the answer of the /v1/tags operations.
type tagList struct {
	Tags         []string  `json:"tags"`
	ComputedTags []string  `json:"computedTags"`
	Ignored      *[]string `json:"ignored,omitempty"`
}

func (s *Server) knownTags(c echo.Context, ignored *[]string) error {
	v := s.cur.Vocabulary()
	known, err := v.KnownTags(c.Request().Context())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, tagList{Tags: nonNil(known), ComputedTags: nonNil(v.ComputedKeys()), Ignored: ignored})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) handleListTags(c echo.Context) error { return s.knownTags(c, nil) }

// tagFormatError answers the format problems of a tag list body (400 INVALID_TAG_FORMAT).
func tagFormatError(err error) error {
	var fe *gtc.TagFormatError
	if !errors.As(err, &fe) {
		return err
	}
	fields := make([]gtc.FieldError, len(fe.Problems))
	for i, p := range fe.Problems {
		fields[i] = gtc.FieldError{Field: fmt.Sprintf("tags[%d]", p.Index), Message: p.Message}
	}
	return gtc.FieldsError(gtc.CodeInvalidTagFormat, fields)
}

func (s *Server) handleAddTags(c echo.Context) error {
	b, err := requireBody(c)
	if err != nil {
		return err
	}
	tags, err := decodeTagList(b)
	if err != nil {
		return err
	}
	ignored, err := s.cur.Vocabulary().AddTags(c.Request().Context(), tags)
	if err != nil {
		return tagFormatError(err)
	}
	ignored = nonNil(ignored)
	return s.knownTags(c, &ignored)
}

func (s *Server) handleRemoveTags(c echo.Context) error {
	b, err := requireBody(c)
	if err != nil {
		return err
	}
	tags, err := decodeTagList(b)
	if err != nil {
		return err
	}
	if err := s.cur.Vocabulary().RemoveTags(c.Request().Context(), tags); err != nil {
		return tagFormatError(err)
	}
	return s.knownTags(c, nil)
}

func (s *Server) handleTagSchema(c echo.Context) error {
	return writeJSON(c, http.StatusOK, s.cur.Vocabulary().Schema())
}

func (s *Server) handleGlossary(c echo.Context) error {
	g, err := s.cur.Vocabulary().Glossary(c.Request().Context())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, g)
}

// tagDefinition is the wire form of a definition (snake_case, as the frontend sends it).
type tagDefinition struct {
	TagKey      string  `json:"tag_key"`
	Description string  `json:"description"`
	CreatedBy   *string `json:"created_by"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

func (s *Server) handlePutDefinition(c echo.Context) error {
	b, err := requireBody(c)
	if err != nil {
		return err
	}
	req, err := decodeTagDefinition(b)
	if err != nil {
		return err
	}
	caller := gtc.CallerFrom(c.Request().Context())
	d, err := s.cur.Vocabulary().PutDefinition(c.Request().Context(), req.TagKey, req.Description, caller.UserID)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, tagDefinition{TagKey: d.TagKey, Description: d.Description, CreatedBy: d.CreatedBy,
		CreatedAt: gtc.FormatAPITime(d.CreatedAt), UpdatedAt: gtc.FormatAPITime(d.UpdatedAt)})
}

func (s *Server) handleDeleteDefinition(c echo.Context) error {
	if err := s.cur.Vocabulary().DeleteDefinition(c.Request().Context(), param(c, "tag_key")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
