/* The library watch's profile function, filtered in C (worker.Recorder._profile).

   A watched call hands every profile event to Recorder._profile, a Python function: about a thousand events for
   one constructor of the attention lab's MultiHeadAttention, nearly all of them events that function does nothing
   about. This filter decides here, by the same rules, whether Recorder._profile would note anything (call saw() or
   saw_all()), and hands it only those events, unchanged, as sys.setprofile's own trampoline would; the Python
   function then notes what it sees. Events it does nothing about stay here:
     - "return", "c_return", "c_exception";
     - "call" of nn.Module._call_impl whose `self` is not a TorchScript module (by its type's real MRO);
     - "call" of any other code object that is not one of the watches' codes (by first line, then, for a code of
       plain constants only, by equality), whose co_names is not one of the watches' name tuples, that does not use
       all but a few of the names of one of the watches' large functions, and whose file name does not start with
       the generated-code prefix;
     - "c_call" of a builtin that is not one of the watches' builtins or thread starts and whose __name__, up to a
       ".", is not a kernel name (or that has no __name__).
   Anything that fails here is handed on.

   Why decide here rather than hand the Python function every event it might look at: CPython turns profiling off
   while a profile function runs, so anything of the submission's that runs in there is unseen. A Python function
   runs more than its own code: a signal handler of the submission's at its first instruction (a timer that fired
   every 20 us, and a handler that ran F.multi_head_attention_forward when it found itself inside the profile
   function, earned MultiHeadAttention's 20 of 20: red team, session 21), the garbage collector's callbacks and
   finalizers when it allocates. Here no Python code runs, and the garbage collector is off while this code allocates
   (the frame's locals, a set of names); the Python function runs only once there is something to note, which it
   notes whatever else runs meanwhile. Nothing here hashes or compares an object of the submission's: a code object
   is compared only once its name, tables and constants are of the types compile() makes.

   install() takes the watches' constants once per process (the worker module calls it at import, in the zygote,
   before any submission's code runs); it refuses a second call, so they cannot be replaced afterwards.
   setprofile(fn) is sys.setprofile(fn) with this filter in front: sys.getprofile() returns fn, and CPython raises
   the audit event "sys.setprofile" for it as for any other switch (worker._profile_audit). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

static int installed = 0;
static PyObject *lines, *sizes, *call_impl, *script_module, *thread_starts, *watches, *namesets, *generated,
    *name_key, *self_key, *call_str, *c_call_str;
static Py_ssize_t nameset_min, large;
static int quiet_call_impl;
static PyObject *current_fn;          /* what setprofile() last switched on, and the watches it asked for */
static unsigned long current_mask;
#define EVERY (~0UL)                  /* what saw_all() notes: every watch */

#define PLAIN_MAX 65536  /* constants looked at in one code object, nested ones included (more: not plain) */

/* 1 when `obj` (a code object's constant, or the code object) is of the types compile() makes, all the way down;
   *budget counts the objects looked at. */
static int
plain(PyObject *obj, Py_ssize_t *budget, int depth)
{
    if (--*budget < 0 || depth > 200)
        return 0;
    PyTypeObject *t = Py_TYPE(obj);
    if (obj == Py_None || obj == Py_Ellipsis || t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type ||
            t == &PyComplex_Type || t == &PyUnicode_Type || t == &PyBytes_Type)
        return 1;
    if (t == &PyTuple_Type) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); i++)
            if (!plain(PyTuple_GET_ITEM(obj, i), budget, depth + 1))
                return 0;
        return 1;
    }
    if (t == &PyFrozenSet_Type) {
        PyObject *it = PyObject_GetIter(obj), *key;
        int ok = it != NULL;
        while (ok && (key = PyIter_Next(it)) != NULL) {
            ok = plain(key, budget, depth + 1);
            Py_DECREF(key);
        }
        Py_XDECREF(it);
        return ok && !PyErr_Occurred();
    }
    if (t == &PySlice_Type) {
        PySliceObject *s = (PySliceObject *)obj;
        return plain(s->start, budget, depth + 1) && plain(s->stop, budget, depth + 1) &&
            plain(s->step, budget, depth + 1);
    }
    if (t == &PyCode_Type) {
        PyCodeObject *c = (PyCodeObject *)obj;
        if (!PyUnicode_CheckExact(c->co_name) || !PyUnicode_CheckExact(c->co_qualname) ||
                !PyUnicode_CheckExact(c->co_filename) || !PyBytes_CheckExact(c->co_linetable) ||
                !PyBytes_CheckExact(c->co_exceptiontable) || !PyTuple_CheckExact(c->co_consts) ||
                !PyTuple_CheckExact(c->co_names))
            return 0;
        return plain(c->co_consts, budget, depth + 1);
    }
    return 0;
}

/* The watches (a bit each) one of whose namesets co_names (an exact tuple of exact str) uses all but `slack` names
   of (worker._copied); EVERY on an error */
static unsigned long
copied(PyObject *names)
{
    PyObject *have = PyFrozenSet_New(names);
    if (have == NULL)
        return EVERY;
    unsigned long found = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(namesets); i++) {
        PyObject *entry = PyTuple_GET_ITEM(namesets, i);  /* (watch index, frozenset of names, slack) */
        long watch = PyLong_AsLong(PyTuple_GET_ITEM(entry, 0));
        PyObject *lib = PyTuple_GET_ITEM(entry, 1);
        Py_ssize_t slack = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 2)), missing = 0;
        PyObject *it = PyObject_GetIter(lib), *key;
        int r = it != NULL ? 0 : -1;
        while (r >= 0 && (key = PyIter_Next(it)) != NULL) {
            r = PySet_Contains(have, key);
            missing += r == 0;
            Py_DECREF(key);
        }
        Py_XDECREF(it);
        if (r < 0 || PyErr_Occurred()) {
            Py_DECREF(have);
            return EVERY;
        }
        if (missing <= slack)
            found |= 1UL << watch;
    }
    Py_DECREF(have);
    return found;
}

/* What Recorder._profile would note of a call event (worker.py: saw(tag) for the watches of these bits, or
   saw_all(): EVERY); 0 for nothing. EVERY too for anything that fails here. */
static unsigned long
noted_call(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);  /* (a new reference) */
    unsigned long noted = EVERY;
    int r;
    if ((PyObject *)code == call_impl) {
        PyObject *locals = PyFrame_GetLocals(frame);  /* (a new reference) */
        if (locals == NULL)
            goto done;
        PyObject *self = PyDict_CheckExact(locals) ? PyDict_GetItemWithError(locals, self_key) : NULL;
        int script = self != NULL && PyType_IsSubtype(Py_TYPE(self), (PyTypeObject *)script_module);
        int failed = PyErr_Occurred() != NULL || !PyDict_CheckExact(locals);
        Py_DECREF(locals);
        if (failed || script)
            goto done;
        if (quiet_call_impl) {
            noted = 0;
            goto done;
        }
    }
    PyObject *names = code->co_names;
    if (!PyTuple_CheckExact(names))
        goto done;  /* (saw_all) */
    Py_ssize_t n = PyTuple_GET_SIZE(names), count = PyTuple_GET_SIZE(watches);
    PyObject *first = PyLong_FromLong(code->co_firstlineno);
    if (first == NULL)
        goto done;
    int at_line = PySet_Contains(lines, first);
    Py_DECREF(first);
    PyObject *size = PyLong_FromSsize_t(n);
    if (size == NULL || at_line < 0)
        goto done;
    int sized = PySet_Contains(sizes, size), printed = 0;
    Py_DECREF(size);
    if (sized < 0)
        goto done;
    for (Py_ssize_t i = 0; i < count && sized && !printed; i++) {  /* (a tuple of exact str: nothing of its own) */
        printed = PySet_Contains(PyTuple_GET_ITEM(PyTuple_GET_ITEM(watches, i), 1), names);
        if (printed < 0)
            goto done;
    }
    if (at_line || printed) {
        Py_ssize_t budget = PLAIN_MAX;
        if (!plain((PyObject *)code, &budget, 0))
            goto done;  /* (saw_all) */
    }
    /* each watch: its codes (at their first lines), or (a large function's) its name tuples */
    unsigned long bits = 0;
    int in_codes = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *w = PyTuple_GET_ITEM(watches, i);  /* (codes, prints, kernels, builtins) */
        int c = at_line ? PySet_Contains(PyTuple_GET_ITEM(w, 0), (PyObject *)code) : 0;
        int p = c == 0 && sized && n >= large ? PySet_Contains(PyTuple_GET_ITEM(w, 1), names) : 0;
        if (c < 0 || p < 0)
            goto done;
        in_codes |= c;
        if (c || p)
            bits |= 1UL << i;
    }
    if (in_codes || printed) {
        noted = bits;
        goto done;
    }
    /* nothing of a watch's own: names copied from a large function, code torch.fx generated */
    bits = n >= nameset_min ? copied(names) : 0;
    if (bits == EVERY)
        goto done;
    PyObject *file = code->co_filename;
    if (!PyUnicode_Check(file))
        goto done;
    r = PyUnicode_Tailmatch(file, generated, 0, PY_SSIZE_T_MAX, -1);
    if (r != 0)
        goto done;
    noted = bits;
done:
    Py_DECREF(code);
    return noted;
}

/* The same for a C call: a thread start is every watch; else the watches whose kernel (its name up to a ".") or
   builtin (by address) it is. */
static unsigned long
noted_c_call(PyObject *arg)
{
    int r = PySet_Contains(thread_starts, arg);
    if (r != 0)
        return EVERY;
    PyObject *name = PyObject_GetAttr(arg, name_key), *kernel = NULL;
    if (name == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return EVERY;
        PyErr_Clear();
    }
    else if (PyUnicode_CheckExact(name)) {
        Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, PY_SSIZE_T_MAX, 1);
        kernel = dot == -1 ? (Py_INCREF(name), name) : dot >= 0 ? PyUnicode_Substring(name, 0, dot) : NULL;
        if (kernel == NULL) {
            Py_DECREF(name);
            return EVERY;
        }
    }
    else {  /* (a builtin's __name__ is a str: something else is not a builtin) */
        Py_DECREF(name);
        return EVERY;
    }
    unsigned long bits = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(watches) && bits != EVERY; i++) {
        PyObject *w = PyTuple_GET_ITEM(watches, i);
        r = kernel != NULL ? PySet_Contains(PyTuple_GET_ITEM(w, 2), kernel) : 0;
        if (r == 0)
            r = PySet_Contains(PyTuple_GET_ITEM(w, 3), arg);
        if (r < 0)
            bits = EVERY;
        else if (r)
            bits |= 1UL << i;
    }
    Py_XDECREF(name);
    Py_XDECREF(kernel);
    return bits;
}

static int
trampoline(PyObject *fn, PyFrameObject *frame, int what, PyObject *arg)
{
    PyObject *event;
    int want;
    if (what == PyTrace_CALL)
        event = call_str;
    else if (what == PyTrace_C_CALL && arg != NULL)
        event = c_call_str;
    else
        return 0;
    int gc = PyGC_Disable();
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);  /* (none is set at a profile event; kept as it is, whatever) */
    unsigned long noted = what == PyTrace_CALL ? noted_call(frame) : noted_c_call(arg);
    PyErr_Clear();  /* (a failure here notes every watch) */
    PyErr_Restore(type, value, traceback);
    if (gc)
        PyGC_Enable();
    /* Only what the watch that switched this function on asked for (or every watch): a record of another watch's is
       left aside by the grader (protocol.read_evidence), so an event noted only for another one would run the Python
       function, and whatever runs inside it, for nothing (red team, session 21, round 2: a call of the encoder
       layer's code in an attention-only step carried a garbage-collector callback, or a signal handler, that ran
       F.multi_head_attention_forward there: 20 of 20). */
    want = noted == EVERY || (noted & (fn == current_fn ? current_mask : EVERY)) != 0;
    if (!want)
        return 0;
    PyObject *stack[3] = {(PyObject *)frame, event, arg != NULL ? arg : Py_None};
    PyObject *result = PyObject_Vectorcall(fn, stack, 3, NULL);
    if (result == NULL) {  /* as sys.setprofile's trampoline: a profile function that raises is taken off */
        PyErr_Fetch(&type, &value, &traceback);
        PyEval_SetProfile(NULL, NULL);
        PyErr_Restore(type, value, traceback);
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

static PyObject *
install(PyObject *self, PyObject *args)
{
    PyObject *a[8];
    if (installed) {
        PyErr_SetString(PyExc_RuntimeError, "the watch's constants are set once per process");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!nOO!pO!O!O!nU:install", &PyFrozenSet_Type, &a[0], &PyFrozenSet_Type, &a[1],
                          &large, &a[2], &PyType_Type, &a[3], &quiet_call_impl, &PyFrozenSet_Type, &a[4],
                          &PyTuple_Type, &a[5], &PyTuple_Type, &a[6], &nameset_min, &a[7]))
        return NULL;
    if (PyTuple_GET_SIZE(a[5]) > (Py_ssize_t)(8 * sizeof(unsigned long)) - 1) {
        PyErr_SetString(PyExc_ValueError, "too many watches");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a[5]); i++) {
        PyObject *w = PyTuple_GET_ITEM(a[5], i);
        int ok = PyTuple_CheckExact(w) && PyTuple_GET_SIZE(w) == 4;
        for (int k = 0; ok && k < 4; k++)
            ok = PyFrozenSet_CheckExact(PyTuple_GET_ITEM(w, k));
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "watches: (codes, prints, kernels, builtins) frozensets");
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a[6]); i++) {
        PyObject *e = PyTuple_GET_ITEM(a[6], i);
        if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 3 || !PyLong_CheckExact(PyTuple_GET_ITEM(e, 0)) ||
                PyLong_AsLong(PyTuple_GET_ITEM(e, 0)) < 0 ||
                PyLong_AsLong(PyTuple_GET_ITEM(e, 0)) >= PyTuple_GET_SIZE(a[5]) ||
                !PyFrozenSet_CheckExact(PyTuple_GET_ITEM(e, 1)) || !PyLong_CheckExact(PyTuple_GET_ITEM(e, 2))) {
            PyErr_SetString(PyExc_TypeError, "namesets: (watch index, frozenset of names, slack)");
            return NULL;
        }
    }
    name_key = PyUnicode_InternFromString("__name__");
    self_key = PyUnicode_InternFromString("self");
    call_str = PyUnicode_InternFromString("call");
    c_call_str = PyUnicode_InternFromString("c_call");
    if (name_key == NULL || self_key == NULL || call_str == NULL || c_call_str == NULL)
        return NULL;
    for (int i = 0; i < 8; i++)
        Py_INCREF(a[i]);
    lines = a[0]; sizes = a[1]; call_impl = a[2]; script_module = a[3]; thread_starts = a[4]; watches = a[5];
    namesets = a[6]; generated = a[7];
    installed = 1;
    Py_RETURN_NONE;
}

static PyObject *
setprofile(PyObject *self, PyObject *args)
{
    PyObject *fn;
    unsigned long mask = EVERY;
    if (!PyArg_ParseTuple(args, "O|k:setprofile", &fn, &mask))
        return NULL;
    if (fn == Py_None) {
        PyEval_SetProfile(NULL, NULL);
    }
    else {
        if (!installed) {
            PyErr_SetString(PyExc_RuntimeError, "install() first");
            return NULL;
        }
        Py_INCREF(fn);
        Py_XSETREF(current_fn, fn);
        current_mask = mask;
        PyEval_SetProfile(trampoline, fn);
    }
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS,
     "install(lines, sizes, large, call_impl, script_module, quiet_call_impl, thread_starts, watches, namesets, "
     "nameset_min, generated): once."},
    {"setprofile", setprofile, METH_VARARGS,
     "setprofile(fn, mask=all): sys.setprofile(fn), with the watch's filter in front of fn; fn is handed only events "
     "that note a watch of `mask` (a bit per watch, in worker._WATCHES' order) or every watch."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_watchhook", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__watchhook(void)
{
    return PyModule_Create(&module);
}
