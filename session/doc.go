// Package session executes statements: it ties the parser, catalog,
// planner and runtime together, owns the jobs it starts and renders results
// for the shell, job files and golden tests. Presentation (tables on a
// terminal) is left to the callers.
package session
