package clientnet_test

import (
	"net/netip"
	"testing"

	"petstore/internal/clientnet"
)

func TestNetworks(t *testing.T) {
	for _, c := range []struct{ ip, client, wide string }{
		{"203.0.113.5", "203.0.113.5", "203.0.113.0/24"},
		{"::ffff:203.0.113.5", "203.0.113.5", "203.0.113.0/24"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64", "2001:db8:1::/48"},
		{"fe80::1%eth0", "fe80::/64", "fe80::/48"},
	} {
		if got := clientnet.Of(c.ip); got != c.client {
			t.Errorf("Of(%s) = %s, want %s", c.ip, got, c.client)
		}
		if got := clientnet.Wide(netip.MustParseAddr(c.ip)); got != c.wide {
			t.Errorf("Wide(%s) = %s, want %s", c.ip, got, c.wide)
		}
	}
	if got := clientnet.Of("not an address"); got != "not an address" {
		t.Errorf("Of of a name: %s", got)
	}
}
