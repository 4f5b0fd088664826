"""Long texts: a list too long for one answer, or a text too long for one prompt, read in pieces.

`read` chooses the way. Item by item: `layout` reads the text's shapes (tables, mail messages, the
lines of a list), `units` finds the units that each hold one item and the header text around them,
and `itemwise` reads each unit on its own. In parts: `parts` splits a text on its natural units into
parts that fit, `plan` decides the parts and the schema and options each is read with, and
`partwise` reads them. Either way `merge` makes one row of the pieces (`duplicates`: the same item
read twice), and `completeness` checks what that row may leave out.
"""
