package live

import (
	"slices"
	"testing"
)

func TestMuted(t *testing.T) {
	tests := []struct {
		name  string
		apply func(c *Controls)
		want  map[string]bool
	}{
		{"nothing muted", func(*Controls) {}, map[string]bool{"grimjaw": false, "mira": false}},
		{"one muted", func(c *Controls) { c.SetMuted("grimjaw", true) }, map[string]bool{"grimjaw": true, "mira": false}},
		{"one unmuted", func(c *Controls) { c.SetMuted("grimjaw", true); c.SetMuted("grimjaw", false) },
			map[string]bool{"grimjaw": false, "mira": false}},
		{"all muted", func(c *Controls) { c.SetMuted("all", true) }, map[string]bool{"grimjaw": true, "mira": true}},
		{"all unmuted clears single mutes", func(c *Controls) {
			c.SetMuted("grimjaw", true)
			c.SetMuted("all", true)
			c.SetMuted("all", false)
		}, map[string]bool{"grimjaw": false, "mira": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewControls()
			tt.apply(c)
			for id, want := range tt.want {
				if got := c.Muted(id); got != want {
					t.Errorf("Muted(%q) = %v, want %v", id, got, want)
				}
			}
		})
	}
}

func TestNextIsTakenOnce(t *testing.T) {
	c := NewControls()
	c.SetNext("grimjaw")
	if got := c.TakeNext(); got != "grimjaw" {
		t.Fatalf("first TakeNext = %q, want grimjaw", got)
	}
	if got := c.TakeNext(); got != "" {
		t.Fatalf("second TakeNext = %q, want nothing", got)
	}
}

func TestSceneIsCopied(t *testing.T) {
	c := NewControls()
	present := []string{"grimjaw", "mira"}
	c.SetScene(Scene{LocationID: "tavern", Present: present})
	present[0] = "changed"
	got := c.Scene()
	if got.LocationID != "tavern" || !slices.Equal(got.Present, []string{"grimjaw", "mira"}) {
		t.Fatalf("Scene() = %+v after the caller changed its slice", got)
	}
	got.Present[1] = "changed"
	if p := c.PresentNPCs(); !slices.Equal(p, []string{"grimjaw", "mira"}) {
		t.Fatalf("PresentNPCs() = %v after the caller changed a returned slice", p)
	}
}

func TestDirection(t *testing.T) {
	tests := []struct {
		name  string
		apply func(c *Controls)
		want  []string // what successive replies of grimjaw get
	}{
		{"none", func(*Controls) {}, []string{"", ""}},
		{"until cleared", func(c *Controls) { c.SetDirection("grimjaw", "be curt", 0) }, []string{"be curt", "be curt", "be curt"}},
		{"for two replies", func(c *Controls) { c.SetDirection("grimjaw", "be curt", 2) }, []string{"be curt", "be curt", ""}},
		{"cleared", func(c *Controls) { c.SetDirection("grimjaw", "be curt", 0); c.SetDirection("grimjaw", "", 0) }, []string{""}},
		{"replaced", func(c *Controls) { c.SetDirection("grimjaw", "be curt", 1); c.SetDirection("grimjaw", "lie", 0) }, []string{"lie", "lie"}},
		{"another NPC's", func(c *Controls) { c.SetDirection("mira", "be curt", 0) }, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewControls()
			tt.apply(c)
			for i, want := range tt.want {
				if got := c.TakeDirection("grimjaw"); got != want {
					t.Fatalf("reply %d: TakeDirection = %q, want %q", i+1, got, want)
				}
			}
		})
	}
}
