package staff

import (
	"errors"
	"net/http"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/internal/strictinput"
)

// categoryRequest is the body that names a category: a new one (number
// omitted: the one after the highest in use), or a new name for one.
type categoryRequest struct {
	Number int64  `json:"number"`
	Name   string `json:"name"`
}

// handleListCategories answers every category and every number pets carry
// that no category names, with their pets, in number order.
func handleListCategories(e *core.RequestEvent) error {
	uses, err := categories.Uses(e.App)
	if err != nil {
		return storeError(err)
	}
	return writeJSON(e, http.StatusOK, map[string]any{"items": uses})
}

func handleCreateCategory(e *core.RequestEvent) error {
	var body categoryRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	c, err := categories.Create(e.App, body.Number, body.Name, "", audit.ActorOf(e))
	if err != nil {
		return categoryError(err)
	}
	return writeJSON(e, http.StatusCreated, categories.Category{ID: c.Number(), Name: c.Name()})
}

func handleRenameCategory(e *core.RequestEvent) error {
	number, err := categoryNumber(e)
	if err != nil {
		return err
	}
	var body categoryRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	c, err := categories.Rename(e.App, number, body.Name, audit.ActorOf(e))
	if err != nil {
		return categoryError(err)
	}
	return writeJSON(e, http.StatusOK, categories.Category{ID: c.Number(), Name: c.Name()})
}

func handleDeleteCategory(e *core.RequestEvent) error {
	number, err := categoryNumber(e)
	if err != nil {
		return err
	}
	if err := categories.Delete(e.App, number, audit.ActorOf(e)); err != nil {
		return categoryError(err)
	}
	e.Response.WriteHeader(http.StatusNoContent)
	return nil
}

// categoryNumber is the path's category number.
func categoryNumber(e *core.RequestEvent) (int64, error) {
	n, err := strictinput.PositiveDecimal(e.Request.PathValue("number"))
	if err != nil || n > categories.MaxNumber {
		return 0, router.NewNotFoundError("No such category.", nil)
	}
	return n, nil
}

// categoryError is err as the answer: an unknown number as 404, anything
// else as storeError says.
func categoryError(err error) error {
	if errors.Is(err, categories.ErrNotFound) {
		return router.NewNotFoundError("No such category.", nil)
	}
	return storeError(err)
}
