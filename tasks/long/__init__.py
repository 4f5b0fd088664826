"""Long texts: a text too long for one prompt, or a list too long for one answer, read in pieces.

`parts` splits a text on its natural units into parts that fit, `plan` decides the parts and the
schema and options each is read with, `partwise` reads them and `merge` makes one row of them;
`completeness` checks what that row may leave out.
"""
