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
static PyObject *codes, *lines, *prints, *sizes, *call_impl, *script_module, *c_calls, *kernels, *namesets,
    *generated, *name_key, *self_key, *call_str, *c_call_str;
static Py_ssize_t nameset_min;
static int quiet_call_impl;

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

/* 1 when co_names (an exact tuple of exact str) uses all but `slack` of one nameset's names; -1 on an error */
static int
copied(PyObject *names)
{
    PyObject *have = PyFrozenSet_New(names);
    if (have == NULL)
        return -1;
    int found = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(namesets) && !found; i++) {
        PyObject *pair = PyTuple_GET_ITEM(namesets, i);  /* (frozenset of names, slack) */
        PyObject *lib = PyTuple_GET_ITEM(pair, 0);
        Py_ssize_t slack = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1)), missing = 0;
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
            return -1;
        }
        found = missing <= slack;
    }
    Py_DECREF(have);
    return found;
}

/* 1: hand the event on; 0: Recorder._profile would do nothing about it */
static int
wanted_call(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);  /* (a new reference) */
    int want = 1, r;
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
            want = 0;
            goto done;
        }
    }
    PyObject *names = code->co_names;
    if (!PyTuple_CheckExact(names))
        goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    PyObject *first = PyLong_FromLong(code->co_firstlineno);
    if (first == NULL)
        goto done;
    r = PySet_Contains(lines, first);
    Py_DECREF(first);
    if (r < 0)
        goto done;
    if (r) {
        Py_ssize_t budget = PLAIN_MAX;
        if (!plain((PyObject *)code, &budget, 0))
            goto done;  /* (Recorder._profile: saw_all) */
        r = PySet_Contains(codes, (PyObject *)code);
        if (r != 0)
            goto done;
    }
    PyObject *size = PyLong_FromSsize_t(n);
    if (size == NULL)
        goto done;
    r = PySet_Contains(sizes, size);
    Py_DECREF(size);
    if (r != 0 && (r < 0 || (r = PySet_Contains(prints, names)) != 0))
        goto done;
    if (n >= nameset_min && copied(names) != 0)
        goto done;
    PyObject *file = code->co_filename;
    if (!PyUnicode_Check(file))
        goto done;
    r = PyUnicode_Tailmatch(file, generated, 0, PY_SSIZE_T_MAX, -1);
    if (r != 0)
        goto done;
    want = 0;
done:
    Py_DECREF(code);
    return want;
}

static int
wanted_c_call(PyObject *arg)
{
    int r = PySet_Contains(c_calls, arg);
    if (r != 0)
        return 1;
    PyObject *name = PyObject_GetAttr(arg, name_key);
    if (name == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            return 0;  /* (name None: not a kernel) */
        }
        return 1;
    }
    int want = 1;
    if (PyUnicode_CheckExact(name)) {
        r = PySet_Contains(kernels, name);
        if (r == 0) {
            Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, PY_SSIZE_T_MAX, 1);
            if (dot == -1)
                want = 0;
            else if (dot >= 0) {
                PyObject *head = PyUnicode_Substring(name, 0, dot);
                if (head != NULL) {
                    r = PySet_Contains(kernels, head);
                    Py_DECREF(head);
                    if (r == 0)
                        want = 0;
                }
            }
        }
    }
    Py_DECREF(name);
    return want;
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
    want = what == PyTrace_CALL ? wanted_call(frame) : wanted_c_call(arg);
    PyErr_Clear();  /* (a failure here hands the event on: `want` is 1) */
    PyErr_Restore(type, value, traceback);
    if (gc)
        PyGC_Enable();
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
    PyObject *a[10];
    if (installed) {
        PyErr_SetString(PyExc_RuntimeError, "the watch's constants are set once per process");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO!pO!O!O!nU:install", &PyFrozenSet_Type, &a[0], &PyFrozenSet_Type,
                          &a[1], &PyFrozenSet_Type, &a[2], &PyFrozenSet_Type, &a[3], &a[4], &PyType_Type, &a[5],
                          &quiet_call_impl, &PyFrozenSet_Type, &a[6], &PyFrozenSet_Type, &a[7], &PyTuple_Type, &a[8],
                          &nameset_min, &a[9]))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a[8]); i++) {
        PyObject *pair = PyTuple_GET_ITEM(a[8], i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
                !PyFrozenSet_CheckExact(PyTuple_GET_ITEM(pair, 0)) || !PyLong_CheckExact(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_SetString(PyExc_TypeError, "namesets: (frozenset of names, slack) pairs");
            return NULL;
        }
    }
    name_key = PyUnicode_InternFromString("__name__");
    self_key = PyUnicode_InternFromString("self");
    call_str = PyUnicode_InternFromString("call");
    c_call_str = PyUnicode_InternFromString("c_call");
    if (name_key == NULL || self_key == NULL || call_str == NULL || c_call_str == NULL)
        return NULL;
    for (int i = 0; i < 10; i++)
        Py_INCREF(a[i]);
    codes = a[0]; lines = a[1]; prints = a[2]; sizes = a[3]; call_impl = a[4]; script_module = a[5];
    c_calls = a[6]; kernels = a[7]; namesets = a[8]; generated = a[9];
    installed = 1;
    Py_RETURN_NONE;
}

static PyObject *
setprofile(PyObject *self, PyObject *fn)
{
    if (fn == Py_None) {
        PyEval_SetProfile(NULL, NULL);
    }
    else {
        if (!installed) {
            PyErr_SetString(PyExc_RuntimeError, "install() first");
            return NULL;
        }
        PyEval_SetProfile(trampoline, fn);
    }
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS,
     "install(codes, lines, prints, sizes, call_impl, script_module, quiet_call_impl, c_calls, kernels, namesets, "
     "nameset_min, generated): once."},
    {"setprofile", setprofile, METH_O, "sys.setprofile(fn), with the watch's filter in front of fn."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_watchhook", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__watchhook(void)
{
    return PyModule_Create(&module);
}
