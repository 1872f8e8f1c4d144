alter proto bundle insert (a.B) update (a.C, a.D) delete (a.E)
