// Package staff is the JSON API behind the staff page (/staff/): store staff,
// signed in as PocketBase superusers, issue, search, change, expire, roll,
// revoke and unban API keys and read each key's and customer's use and
// history, the top customers of the month and the windows near their day
// quota, export the use of any range as CSV, name the
// pets' categories, manage the customers that own keys, manage the webhook endpoints and see their
// deliveries, and see a cluster's nodes. Errors have
// PocketBase's shape ({"status","message","data"}), like the rest of /api/.
package staff

import (
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/usage"
)

// Prefix is where the routes live.
const Prefix = "/api/petstore"

// maxBodyBytes bounds a request body, however it is sent; the largest one is
// a few hundred bytes.
const maxBodyBytes = 16 << 10

// AddRoutes is the whole staff API: every route, all for superusers only.
// PocketBase's auth-token loader has read the superuser's token by then; an
// API key is no PocketBase token, so it never opens these routes (401).
// nodes is nil on a single server.
func AddRoutes(r *router.Router[*core.RequestEvent], history *usage.Recorder, w Webhooks, nodes ClusterView) {
	g := r.Group(Prefix)
	g.Bind(jsonErrors(), apis.RequireSuperuserAuth(), apis.BodyLimit(maxBodyBytes), noStore())

	g.GET("/keys", handleListKeys(history)) // ?search=&state=&sort=&page=&perPage=
	g.POST("/keys", handleCreateKey)
	g.PATCH("/keys/{id}", handleChangeKey) // name, plan, quotas, scopes, and the expiry (the one way to change it)
	g.POST("/keys/{id}/roll", handleRollKey)
	g.POST("/keys/{id}/revoke", handleRevokeKey)
	g.POST("/keys/{id}/lift-ban", handleLiftBan)
	g.GET("/keys/{id}/usage", handleUsage(history))
	g.GET("/keys/{id}/hours", handleKeyHours(history)) // the last 48 UTC hours, oldest first
	g.GET("/keys/{id}/history", handleHistory)         // the key's audit trail, newest first: ?page=&perPage=
	g.PUT("/keys/{id}/customer", handleAssignKey)      // {"customer": id or name, or "" for none}: the key moves to the customer's plan

	g.GET("/usage.csv", handleExport(history))                 // ?from=&to= (UTC days or hours, to included)&by=day|hour&per=key|customer&key=|customer=: streamed, audited
	g.GET("/usage/top-customers", handleTopCustomers(history)) // this UTC month's most requests: ?limit= (default 10)
	g.GET("/usage/near-limit", handleNearLimit(history))       // the keys' and customers' day windows past 80 % of their quota today

	g.GET("/customers", handleListCustomers(history)) // by name, with their plans, keys and the keys' use today
	g.POST("/customers", handleCreateCustomer)
	g.GET("/customers/{id}", handleShowCustomer(history)) // with its keys and their use today
	g.PATCH("/customers/{id}", handleChangeCustomer)      // name, contact, notes, plan (every key of it moves with it)
	g.GET("/customers/{id}/history", handleCustomerHistory)
	g.GET("/customers/{id}/hours", handleCustomerHours(history)) // its keys' last 48 UTC hours, added up
	g.GET("/customers/{id}/usage", handleCustomerUsage(history)) // its keys' last ?days= UTC days (default 30, at most 90), added up

	g.GET("/categories", handleListCategories) // named and unnamed, with their pets
	g.POST("/categories", handleCreateCategory)
	g.PATCH("/categories/{number}", handleRenameCategory)
	g.DELETE("/categories/{number}", handleDeleteCategory) // refused while pets carry it

	g.GET("/webhooks", w.list)
	g.POST("/webhooks", w.create) // 201 {id, secret}: the secret shown once
	g.GET("/webhooks/{id}", w.get)
	g.PATCH("/webhooks/{id}", w.change) // url, events, description, paused
	g.DELETE("/webhooks/{id}", w.remove)
	g.POST("/webhooks/{id}/roll", w.roll) // a new secret; the old one signs too for the grace
	g.POST("/webhooks/{id}/test", w.test) // a webhook.test event, to this endpoint
	g.GET("/webhooks/{id}/attempts", w.attempts)
	g.GET("/webhooks/{id}/history", w.history)               // the endpoint's audit trail, newest first, its deletion's too: ?page=&perPage=
	g.POST("/webhooks/{id}/events/{event}/resend", w.resend) // a failed event, sent again

	g.GET("/cluster", handleCluster(nodes)) // the nodes, their roles, lag and the leader; {"cluster":null} on a single server
}

// noStore keeps answers, new keys among them, out of every cache.
func noStore() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id: "petstoreStaffNoStore",
		Func: func(e *core.RequestEvent) error {
			e.Response.Header().Set("Cache-Control", "no-store")
			return e.Next()
		},
	}
}
